package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
)

// profile starts a CPU profile of the figure name when -profile names a directory, and
// returns the function that stops it and writes the heap profile beside it (after a
// collection, so that it shows what stays). The files are <dir>/<name>.cpu.pprof and
// <dir>/<name>.heap.pprof, for `go tool pprof`.
func (s *server) profile(o options, name string) (stop func(), err error) {
	if o.profileDir == "" {
		return func() {}, nil
	}
	if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
		return nil, err
	}
	base := filepath.Join(o.profileDir, name)
	f, err := os.Create(base + ".cpu.pprof")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("profile %s: %w", name, err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		runtime.GC()
		h, err := os.Create(base + ".heap.pprof")
		if err != nil {
			s.log.Error("heap profile", "err", err)
			return
		}
		defer h.Close()
		if err := pprof.Lookup("heap").WriteTo(h, 0); err != nil {
			s.log.Error("heap profile", "err", err)
		}
	}, nil
}
