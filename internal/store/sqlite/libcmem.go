//go:build linux && (amd64 || arm64 || loong64 || ppc64le || s390x || riscv64 || 386 || arm) && !libc.membrk && !libc.memgrind

package sqlite

import (
	"sync"
	_ "unsafe" // go:linkname

	_ "modernc.org/libc" // the variables linked below
	"modernc.org/memory"
)

// SQLite's memory comes from modernc.org/libc's malloc: one allocator for the process
// (modernc.org/memory), behind one mutex. When SQLite frees memory, that allocator keeps the
// regions it emptied for reuse (up to 4 MiB more than the most it ever had in use, the newest
// 4 MiB of each size committed) instead of unmapping them: after a burst of conversations,
// some 4 MiB of the server's resident memory. Only the allocator's Trim gives them back, and
// libc neither calls it nor exports the allocator or its mutex. So this links to both by
// name, with libc's own declarations (libc_musl.go; the build constraint above is that file's):
// TestLibcAllocatorDeclarations checks them against the source of the libc that go.mod names.

//go:linkname libcAllocator modernc.org/libc.allocator
var libcAllocator memory.Allocator

//go:linkname libcAllocatorMu modernc.org/libc.allocatorMu
var libcAllocatorMu sync.Mutex

// trimSQLiteMemory unmaps the regions of SQLite's memory that nothing uses any more.
func trimSQLiteMemory() error {
	libcAllocatorMu.Lock()
	defer libcAllocatorMu.Unlock()
	return libcAllocator.Trim()
}
