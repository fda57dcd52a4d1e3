package hostproc

import (
	"errors"
	"os"
	"testing"
)

func TestReadStat(t *testing.T) {
	st, err := ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.PID != os.Getpid() || st.PPID != os.Getppid() || st.StartTime == 0 || st.Dead() || st.Stopped() {
		t.Fatalf("stat of self: %+v", st)
	}
	if _, err := ReadStat(1 << 30); !errors.Is(err, ErrNoProcess) {
		t.Fatalf("stat of a missing pid: %v", err)
	}
}
