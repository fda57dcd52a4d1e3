// Package cgroup gives each sandbox control groups of its own: it finds the hierarchies the
// machine mounts (cgroup v1 with one hierarchy per controller, cgroup v2 with one for all, or a
// hybrid of both), creates a group in each hierarchy it needs, writes memory, process and CPU
// limits, freezes and thaws the group, and kills everything in it before removing it.
//
// A Group is named by a path relative to the roots of the hierarchies, such as
// "agentd/3f9c0e1b2a4d/<sandbox id>", and has that path in every hierarchy it uses. This
// package starts no process: the first process of a sandbox moves itself into the group (by
// writing "0" to each of JoinFiles) before it starts any other, so every descendant is born
// inside the group and cannot leave it without write access to cgroupfs.
package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Controllers this package uses.
const (
	Memory  = "memory"
	PIDs    = "pids"
	CPU     = "cpu"
	Freezer = "freezer"
)

// controllers is every controller this package uses, the freezer first: it is the one a
// group cannot do without.
var controllers = []string{Freezer, Memory, PIDs, CPU}

// ErrNoController: the machine mounts no hierarchy with a controller a limit needs.
var ErrNoController = errors.New("cgroup controller not available")

// hierarchy is one mounted cgroup hierarchy.
type hierarchy struct {
	mount string // where it is mounted, e.g. /sys/fs/cgroup/memory
	v2    bool
}

// Layout is where the machine mounts the controllers this package uses. Its zero value has
// none; use Detect.
type Layout struct {
	byCtrl map[string]*hierarchy // absent: the machine lacks the controller
	// weighed is a group that gets CPU weight weight whenever a group below it is created
	// (WeighCPU); "" for none.
	weighed string
	weight  int
	// mu guards favoured: the Destroys under way below weighed, during which it weighs
	// DefaultCPUWeight (Group.favour).
	mu       sync.Mutex
	favoured int
	// favourAfter is how long killed processes may take to end before Destroy favours
	// their group: the constant favourAfter, other in tests.
	favourAfter time.Duration
}

// Detect reads /proc/self/mountinfo. A controller mounted as cgroup v1 is used there; one
// that is not is taken from the cgroup v2 hierarchy when that offers it (the v2 freezer,
// cgroup.freeze, needs no controller). It fails when no freezer is found: without one a
// sandbox can be neither paused nor killed reliably.
func Detect() (*Layout, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("find cgroup hierarchies: %w", err)
	}
	defer f.Close()
	mounts, err := parseMountinfo(f)
	if err != nil {
		return nil, fmt.Errorf("find cgroup hierarchies: %w", err)
	}
	l := layoutOf(mounts, readV2Controllers)
	if !l.Has(Freezer) {
		return nil, errors.New("find cgroup hierarchies: neither a cgroup v1 freezer nor cgroup v2 is mounted")
	}
	return l, nil
}

// mount is a cgroup filesystem found in mountinfo.
type mount struct {
	point string
	v2    bool
	ctrls []string // v1: the controllers of the hierarchy
}

// parseMountinfo returns the cgroup and cgroup2 mounts listed in r, in the format of
// proc(5): "36 35 98:0 /root /mnt/point rw,relatime shared:1 - cgroup cgroup rw,memory".
func parseMountinfo(r io.Reader) ([]mount, error) {
	var out []mount
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			return nil, fmt.Errorf("mountinfo line %q", line)
		}
		switch g[0] {
		case "cgroup2":
			out = append(out, mount{point: unescape(f[4]), v2: true})
		case "cgroup":
			m := mount{point: unescape(f[4])}
			for opt := range strings.SplitSeq(g[2], ",") {
				if slices.Contains(controllers, opt) {
					m.ctrls = append(m.ctrls, opt)
				}
			}
			out = append(out, m)
		}
	}
	return out, sc.Err()
}

// unescape undoes the octal escapes (\040 for a space) of mountinfo paths.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// layoutOf picks a hierarchy for each controller: the first v1 mount that has it, else the
// first v2 mount if v2Ctrls says it offers it (the freezer always, as cgroup.freeze).
func layoutOf(mounts []mount, v2Ctrls func(mount string) []string) *Layout {
	l := &Layout{byCtrl: map[string]*hierarchy{}, favourAfter: favourAfter}
	byPoint := map[string]*hierarchy{}
	var v2 *hierarchy
	for _, m := range mounts {
		if m.v2 {
			if v2 == nil {
				v2 = &hierarchy{mount: m.point, v2: true}
			}
			continue
		}
		for _, c := range m.ctrls {
			if l.byCtrl[c] != nil {
				continue
			}
			h := byPoint[m.point]
			if h == nil {
				h = &hierarchy{mount: m.point}
				byPoint[m.point] = h
			}
			l.byCtrl[c] = h
		}
	}
	if v2 != nil {
		offered := v2Ctrls(v2.mount)
		for _, c := range controllers {
			if l.byCtrl[c] == nil && (c == Freezer || slices.Contains(offered, c)) {
				l.byCtrl[c] = v2
			}
		}
	}
	return l
}

// readV2Controllers lists the controllers of the v2 hierarchy mounted at mount.
func readV2Controllers(mount string) []string {
	b, err := os.ReadFile(filepath.Join(mount, "cgroup.controllers"))
	if err != nil {
		return nil
	}
	return strings.Fields(string(b))
}

// Has reports whether the machine offers controller c (Memory, PIDs, CPU, Freezer).
func (l *Layout) Has(c string) bool { return l.byCtrl[c] != nil }

// String says which hierarchies hold which controllers, for logs.
// FreezerVersion says which hierarchy freezes sandboxes: "v1" or "v2".
func (l *Layout) FreezerVersion() string {
	if h := l.byCtrl[Freezer]; h != nil && h.v2 {
		return "v2"
	}
	return "v1"
}

func (l *Layout) String() string {
	var parts []string
	for _, h := range l.hierarchies() {
		var cs []string
		for _, c := range controllers {
			if l.byCtrl[c] == h {
				cs = append(cs, c)
			}
		}
		v := "v1"
		if h.v2 {
			v = "v2"
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s)", v, h.mount, strings.Join(cs, ", ")))
	}
	if len(parts) == 0 {
		return "no cgroup hierarchies"
	}
	return "cgroup " + strings.Join(parts, "; ")
}

// hierarchies returns each hierarchy in use once, the freezer's first.
func (l *Layout) hierarchies() []*hierarchy {
	var out []*hierarchy
	for _, c := range controllers {
		if h := l.byCtrl[c]; h != nil && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// Group returns the group at rel, a clean relative path such as "agentd/x/<id>". It does
// not create it.
func (l *Layout) Group(rel string) (*Group, error) {
	if rel == "" || filepath.IsAbs(rel) || filepath.Clean(rel) != rel || rel == "." ||
		slices.Contains(strings.Split(rel, "/"), "..") {
		return nil, fmt.Errorf("cgroup path %q is not a clean relative path", rel)
	}
	return &Group{layout: l, rel: rel}, nil
}

// Children returns the names of the groups directly below rel, in any hierarchy.
func (l *Layout) Children(rel string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, h := range l.hierarchies() {
		entries, err := os.ReadDir(filepath.Join(h.mount, rel))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list cgroups: %w", err)
		}
		for _, e := range entries {
			if e.IsDir() && !seen[e.Name()] {
				seen[e.Name()] = true
				out = append(out, e.Name())
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// Check reports whether every hierarchy in use is still mounted and readable.
func (l *Layout) Check() error {
	for _, h := range l.hierarchies() {
		if _, err := os.Stat(filepath.Join(h.mount, "cgroup.procs")); err != nil {
			return fmt.Errorf("cgroup hierarchy %s: %w", h.mount, err)
		}
	}
	return nil
}
