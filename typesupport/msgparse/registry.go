package msgparse

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/rmw-rgaps/rmw_rgaps/typesupport/schema"
)

// Registry holds interface definitions by name and parses them on demand,
// resolving nested types among themselves. Parsed schemas are cached and
// shared: every field of type std_msgs/Header points at the same
// *schema.Message. A Registry is safe for concurrent use.
type Registry struct {
	mu       sync.Mutex
	msgSrc   map[string]string // "pkg/Name" -> .msg text
	srvSrc   map[string]string
	msgs     map[string]*schema.Message
	srvs     map[string]*schema.Service
	inFlight map[string]bool // messages being parsed: a second visit is a cycle
	lookup   LookupFunc      // definitions not added: nil, or where to find them
}

// LookupFunc returns the text of the definition of pkg/kind/name (kind
// "msg" or "srv"), or an error wrapping fs.ErrNotExist when it has none.
// Any other error is passed on to the caller of Message or Service.
type LookupFunc func(kind, pkg, name string) (string, error)

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry {
	return &Registry{
		msgSrc:   map[string]string{},
		srvSrc:   map[string]string{},
		msgs:     map[string]*schema.Message{},
		srvs:     map[string]*schema.Service{},
		inFlight: map[string]bool{},
	}
}

// AddMessage registers the .msg text of pkg/msg/name. Adding a definition
// forgets everything parsed so far (parsed schemas may depend on it).
func (r *Registry) AddMessage(pkg, name, src string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgSrc[pkg+"/"+name] = src
	r.resetLocked()
}

// AddService registers the .srv text of pkg/srv/name.
func (r *Registry) AddService(pkg, name, src string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.srvSrc[pkg+"/"+name] = src
	r.resetLocked()
}

// SetLookup makes the registry ask fn for every definition it was not
// given (with AddMessage, AddService or AddFS) when a type, or a type
// nested in it, is first needed; what fn returns is kept as if added.
// Messages and Services list only what was added or already looked up.
func (r *Registry) SetLookup(fn LookupFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lookup = fn
}

// sourceLocked returns the text of pkg/kind/name from src, or from the
// lookup function (remembering it in src).
func (r *Registry) sourceLocked(src map[string]string, kind, pkg, name string) (string, error) {
	key := pkg + "/" + name
	if s, ok := src[key]; ok {
		return s, nil
	}
	if r.lookup != nil {
		s, err := r.lookup(kind, pkg, name)
		if err == nil {
			src[key] = s
			return s, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("msgparse: looking up %s/%s/%s: %w", pkg, kind, name, err)
		}
	}
	return "", fmt.Errorf("msgparse: %w %s/%s/%s", ErrUnknownType, pkg, kind, name)
}

func (r *Registry) resetLocked() {
	clear(r.msgs)
	clear(r.srvs)
}

// AddFS registers every file of fsys whose path ends in
// "<pkg>/msg/<Name>.msg" or "<pkg>/srv/<Name>.srv" (the layout of a ROS 2
// package's share directory, and of an install prefix's share/ tree) and
// returns how many it added.
func (r *Registry) AddFS(fsys fs.FS) (int, error) {
	n := 0
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		ext := path.Ext(p)
		if ext != ".msg" && ext != ".srv" {
			return nil
		}
		dir := path.Dir(p)
		kind := path.Base(dir)
		pkg := path.Base(path.Dir(dir))
		name := strings.TrimSuffix(path.Base(p), ext)
		if kind != ext[1:] || !validPackageName(pkg) || !validMessageName(name) {
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		if ext == ".msg" {
			r.AddMessage(pkg, name, string(b))
		} else {
			r.AddService(pkg, name, string(b))
		}
		n++
		return nil
	})
	return n, err
}

// splitName accepts "pkg/Name" and "pkg/kind/Name".
func splitName(full, kind string) (pkg, name string, err error) {
	parts := strings.Split(full, "/")
	switch {
	case len(parts) == 2:
		return parts[0], parts[1], nil
	case len(parts) == 3 && parts[1] == kind:
		return parts[0], parts[2], nil
	}
	return "", "", fmt.Errorf("msgparse: %q: want pkg/%s/Name or pkg/Name", full, kind)
}

// Message returns the schema of a message type named "pkg/msg/Name" or
// "pkg/Name".
func (r *Registry) Message(full string) (*schema.Message, error) {
	pkg, name, err := splitName(full, "msg")
	if err != nil {
		return nil, err
	}
	return r.ResolveMessage(pkg, name)
}

// ResolveMessage implements Resolver: the schema of pkg/msg/name.
func (r *Registry) ResolveMessage(pkg, name string) (*schema.Message, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.resolveLocked(pkg, name)
}

func (r *Registry) resolveLocked(pkg, name string) (*schema.Message, error) {
	key := pkg + "/" + name
	if m, ok := r.msgs[key]; ok {
		return m, nil
	}
	src, err := r.sourceLocked(r.msgSrc, "msg", pkg, name)
	if err != nil {
		return nil, err
	}
	if r.inFlight[key] {
		return nil, fmt.Errorf("%s/msg/%s contains itself", pkg, name)
	}
	r.inFlight[key] = true
	defer delete(r.inFlight, key)
	m, err := ParseMessage(pkg, name, src, lockedResolver{r})
	if err != nil {
		return nil, err
	}
	r.msgs[key] = m
	return m, nil
}

// lockedResolver resolves nested types while the registry's lock is held.
type lockedResolver struct{ r *Registry }

func (l lockedResolver) ResolveMessage(pkg, name string) (*schema.Message, error) {
	return l.r.resolveLocked(pkg, name)
}

// Service returns the schema of a service type named "pkg/srv/Name" or
// "pkg/Name".
func (r *Registry) Service(full string) (*schema.Service, error) {
	pkg, name, err := splitName(full, "srv")
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := pkg + "/" + name
	if s, ok := r.srvs[key]; ok {
		return s, nil
	}
	src, err := r.sourceLocked(r.srvSrc, "srv", pkg, name)
	if err != nil {
		return nil, err
	}
	s, err := ParseService(pkg, name, src, lockedResolver{r})
	if err != nil {
		return nil, err
	}
	r.srvs[key] = s
	return s, nil
}

// Messages returns the names ("pkg/msg/Name") of all registered message
// types, sorted.
func (r *Registry) Messages() []string { return r.names(r.msgSrc, "msg") }

// Services returns the names ("pkg/srv/Name") of all registered service
// types, sorted.
func (r *Registry) Services() []string { return r.names(r.srvSrc, "srv") }

func (r *Registry) names(src map[string]string, kind string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(src))
	for k := range src {
		pkg, name, _ := strings.Cut(k, "/")
		out = append(out, pkg+"/"+kind+"/"+name)
	}
	sort.Strings(out)
	return out
}
