package app

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A record lock is per process, so the second holder must be another process.
func TestLockDataDirExcludesOtherProcesses(t *testing.T) {
	if os.Getenv("AGENTD_LOCK_CHILD") != "" {
		_, err := LockDataDir(os.Getenv("AGENTD_LOCK_CHILD"))
		if err == nil {
			os.Exit(0)
		}
		os.Stderr.WriteString(err.Error())
		os.Exit(3)
	}
	dir := t.TempDir()
	unlock, err := LockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	child := func() (int, string) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLockDataDirExcludesOtherProcesses$")
		cmd.Env = append(os.Environ(), "AGENTD_LOCK_CHILD="+dir)
		out, _ := cmd.CombinedOutput()
		return cmd.ProcessState.ExitCode(), string(out)
	}
	if code, out := child(); code != 3 || !strings.Contains(out, "in use by another agentd process") {
		t.Fatalf("second process locked a held data dir: exit %d, %s", code, out)
	}
	unlock()
	if code, out := child(); code != 0 {
		t.Fatalf("lock not released: exit %d, %s", code, out)
	}
}
