// Package hostproc watches and reads the host processes that sandbox backends start: it reaps
// them through pidfds (Reaper), reads their /proc/<pid>/stat (ReadStat), and removes the
// sandbox directories they leave behind (RemoveAll). It is Linux only, as are the backends
// that use it.
package hostproc
