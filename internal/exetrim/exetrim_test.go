package exetrim

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestExecutableRanges(t *testing.T) {
	const smaps = `00400000-00866000 r-xp 00000000 fe:00 123                            /opt/agent d/agentd
Size:               4504 kB
Rss:                4056 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me dw sd
00866000-00d16000 r--p 00466000 fe:00 123                            /opt/agent d/agentd
Anonymous:             0 kB
00d16000-00d20000 r--p 00916000 fe:00 123                            /opt/agent d/agentd
Anonymous:             8 kB
00d20000-00d76000 rw-p 00920000 fe:00 123                            /opt/agent d/agentd
Anonymous:            40 kB
00d76000-00d78000 r--p 00976000 fe:00 123                            /opt/agent d/agentd
Rss:                   8 kB
00d78000-02dba000 rw-p 00000000 00:00 0 
Anonymous:            92 kB
7f0000000000-7f0000100000 r-xp 00000000 fe:00 456                            /usr/lib/libc.so.6
Anonymous:             0 kB
7fff0a29d000-7fff0a2be000 rw-p 00000000 00:00 0                          [stack]
Anonymous:            16 kB
`
	got, err := executableRanges(strings.NewReader(smaps), "/opt/agent d/agentd")
	if err != nil {
		t.Fatal(err)
	}
	want := []memRange{{0x400000, 0x866000}, {0x866000, 0xd16000}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ranges = %x, want %x (read-only, private, of the executable, and said to hold no page of their own)", got, want)
	}
}

// TestTrim trims this test binary's own read-only pages, which it then keeps
// running on, mapped again as it needs them.
func TestTrim(t *testing.T) {
	trim, err := New()
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	ranges, err := executableRanges(f, exe)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	pc := reflect.ValueOf(TestTrim).Pointer()
	inText := false
	for _, r := range ranges {
		inText = inText || r.start <= pc && pc < r.end
	}
	if !inText {
		t.Fatalf("no range of %x holds this test's code at %#x", ranges, pc)
	}
	before := rssFile(t)
	trim()
	after := rssFile(t)
	if after >= before {
		t.Errorf("RssFile %d kB before the trim, %d kB after", before, after)
	}
	t.Logf("RssFile %d kB before the trim, %d kB after", before, after)
}

func rssFile(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}
