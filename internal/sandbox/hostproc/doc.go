// Package hostproc holds what sandbox backends share on the host: it reaps the processes they
// start through pidfds (Reaper), reads their /proc/<pid>/stat (ReadStat), lays out the
// sandboxes' directories and sockets under a root (Root), and removes those directories
// (RemoveAll). It is Linux only, as are the backends
// that use it.
package hostproc
