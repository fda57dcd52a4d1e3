//go:build !(linux && (amd64 || arm64 || loong64 || ppc64le || s390x || riscv64 || 386 || arm)) || libc.membrk || libc.memgrind

package sqlite

// trimSQLiteMemory does nothing where libc's allocator is another (libcmem.go).
func trimSQLiteMemory() error { return nil }
