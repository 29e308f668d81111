package interfaces

import (
	"embed"
	"io/fs"

	"github.com/rmw-rgaps/rmw_rgaps/typesupport/msgparse"
)

//go:embed defs
var defs embed.FS

// FS returns the embedded definitions, laid out as
// <pkg>/msg/<Name>.msg and <pkg>/srv/<Name>.srv.
func FS() fs.FS {
	sub, err := fs.Sub(defs, "defs")
	if err != nil {
		panic(err) // the embedded tree always has defs/
	}
	return sub
}

// Registry returns a new msgparse.Registry holding every embedded
// definition. Callers may add more (for example a ROS install prefix's
// share directory through AddFS); later additions replace embedded ones of
// the same name.
func Registry() *msgparse.Registry {
	r := msgparse.NewRegistry()
	if _, err := r.AddFS(FS()); err != nil {
		panic(err) // reading an embed.FS does not fail
	}
	return r
}
