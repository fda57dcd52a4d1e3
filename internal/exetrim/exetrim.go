// Package exetrim unmaps the pages of this process's own executable that it has mapped but
// does not use now. A Go server's resident memory at rest is mostly its executable's pages,
// not its heap: start-up (package initialisation, flag parsing, the server's set-up) and the
// first requests touch code and read-only data all over the binary, and the kernel maps each
// page touched together with its neighbours already in the page cache (fault-around, 64 KiB
// at a time), so most of the binary's text, read-only data and function tables end up mapped
// into the process, although little of it is used again. Those pages belong to the page
// cache, shared with every other process running the same file, but each process's resident
// set counts all it maps.
//
// A trim unmaps them (madvise MADV_DONTNEED on the executable's read-only mappings): the
// pages stay in the page cache, and the process maps again, with a few minor faults, the ones
// it needs next. Only mappings that are not writable and hold no private copy of a page are
// trimmed, so nothing is lost: their content is the file's.
package exetrim

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// memRange is an address range of this process.
type memRange struct{ start, end uintptr }

// executableRanges returns the mappings of this process's executable (exe, the target of
// /proc/self/exe) that can be trimmed, read from smaps (/proc/self/smaps): the private ones
// that are not writable and hold no page of their own (Anonymous: 0), so that dropping their
// pages loses nothing. Relocated read-only data of a position-independent build, written
// before it was made read-only, holds such pages and is left out. smaps is read a line at a
// time: it runs to tens of KiB, which read whole would stay in the heap of a runtime that
// collects no garbage while idle.
func executableRanges(smaps io.Reader, exe string) ([]memRange, error) {
	var out []memRange
	var candidate *memRange // the mapping being read, if it may be trimmed
	sc := bufio.NewScanner(smaps)
	for sc.Scan() {
		line := sc.Bytes()
		if r, perms, path, ok := mappingHeader(line); ok {
			candidate = nil
			if string(path) == exe && len(perms) == 4 && perms[1] != 'w' && perms[3] == 'p' {
				candidate = &r
			}
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("Anonymous:")); ok && candidate != nil {
			if string(bytes.TrimSpace(v)) == "0 kB" {
				out = append(out, *candidate)
			}
			candidate = nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read smaps: %w", err)
	}
	return out, nil
}

// mappingHeader parses the first line of a mapping in /proc/<pid>/smaps or maps:
// "start-end perms offset dev inode   path", path empty for an anonymous mapping.
func mappingHeader(line []byte) (r memRange, perms, path []byte, ok bool) {
	rest := line
	var fields [5][]byte
	for i := range fields {
		rest = bytes.TrimLeft(rest, " ")
		f, after, found := bytes.Cut(rest, []byte(" "))
		if len(f) == 0 || (!found && i < 4) {
			return memRange{}, nil, nil, false
		}
		fields[i], rest = f, after
	}
	lo, hi, found := bytes.Cut(fields[0], []byte("-"))
	if !found {
		return memRange{}, nil, nil, false
	}
	start, err1 := strconv.ParseUint(string(lo), 16, 64)
	end, err2 := strconv.ParseUint(string(hi), 16, 64)
	if err1 != nil || err2 != nil || end <= start {
		return memRange{}, nil, nil, false
	}
	return memRange{uintptr(start), uintptr(end)}, fields[1], bytes.TrimLeft(rest, " "), true
}

// New returns the function that unmaps this process's executable's read-only pages. The
// mappings are found once for the process (they do not move), however many servers it starts,
// so that a trim is only system calls.
func New() (trim func(), err error) {
	ranges, err := executable()
	if err != nil {
		return nil, err
	}
	return func() {
		for _, r := range ranges {
			// Only ever fails for a range that is not mapped, which these are.
			_, _, _ = unix.Syscall(unix.SYS_MADVISE, r.start, r.end-r.start, unix.MADV_DONTNEED)
		}
	}, nil
}

// executable returns the trimmable mappings of this process's executable.
var executable = sync.OnceValues(func() ([]memRange, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return nil, fmt.Errorf("find the executable: %w", err)
	}
	smaps, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil, fmt.Errorf("read the mappings: %w", err)
	}
	ranges, err := executableRanges(smaps, exe)
	smaps.Close()
	if err != nil {
		return nil, err
	}
	if len(ranges) == 0 {
		return nil, fmt.Errorf("no read-only mapping of %s", exe)
	}
	return ranges, nil
})
