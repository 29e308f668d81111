package interfaces

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/rmw-rgaps/rmw_rgaps/typesupport/msgparse"
)

// PathEnv names the directories searched for interface definitions before
// AMENT_PREFIX_PATH's and the embedded ones: a list separated by ':' (as
// PATH), each laid out as <pkg>/msg/<Name>.msg and <pkg>/srv/<Name>.srv
// (an install prefix's share/ directory, or a tree of one's own).
const PathEnv = "RGAPS_INTERFACE_PATH"

// SearchPath returns the directories Search should look in, in order: the
// entries of RGAPS_INTERFACE_PATH, then <prefix>/share for every prefix of
// AMENT_PREFIX_PATH (what a sourced ROS 2 installation or workspace sets).
// getenv is os.Getenv, or a stand-in for tests. Empty entries are dropped.
func SearchPath(getenv func(string) string) []string {
	var dirs []string
	for _, d := range filepath.SplitList(getenv(PathEnv)) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	for _, p := range filepath.SplitList(getenv("AMENT_PREFIX_PATH")) {
		if p != "" {
			dirs = append(dirs, filepath.Join(p, "share"))
		}
	}
	return dirs
}

// Search returns a msgparse.Registry that finds each definition when it is
// first needed, in the first of dirs that has <dir>/<pkg>/<kind>/<Name>.<kind>,
// and otherwise among the embedded definitions. An installed definition thus
// wins over the embedded one of the same name: the installation is the
// truth for the ROS distribution it belongs to. Nothing is read before a
// type is asked for, so a large installation costs nothing up front.
func Search(dirs []string) *msgparse.Registry {
	r := msgparse.NewRegistry()
	embedded := FS()
	dirs = append([]string(nil), dirs...)
	r.SetLookup(func(kind, pkg, name string) (string, error) {
		rel := path.Join(pkg, kind, name+"."+kind)
		for _, d := range dirs {
			b, err := os.ReadFile(filepath.Join(d, filepath.FromSlash(rel)))
			if err == nil {
				return string(b), nil
			}
			if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
				return "", err
			}
		}
		b, err := fs.ReadFile(embedded, rel)
		return string(b), err
	})
	return r
}

// DescribeSearch says where Search(dirs) looks, for error messages.
func DescribeSearch(dirs []string) string {
	if len(dirs) == 0 {
		return "the embedded definitions (set " + PathEnv + " or source a ROS 2 installation for more)"
	}
	return strings.Join(dirs, ", ") + " and the embedded definitions"
}
