package conversation

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCloneProgress: git's progress, cut anywhere, reads as its latest stage and percentage,
// and changes only when either does; a piece with several lines gives only the latest.
func TestCloneProgress(t *testing.T) {
	out := "Cloning into '.agentd-clone-w'...\nremote: Enumerating objects: 4001, done.\n" +
		"Receiving objects:   0% (1/4001)\rReceiving objects:   0% (30/4001)\rReceiving objects:   1% (41/4001)\r" +
		"Receiving objects:  99% (3961/4001), 1.2 MiB | 2.0 MiB/s\rReceiving objects: 100% (4001/4001), 1.3 MiB | 2.0 MiB/s, done.\n" +
		"Resolving deltas:   0% (0/12)\rResolving deltas: 100% (12/12), done.\n"
	for _, size := range []int{1, 7, 64, len(out)} {
		var p cloneProgress
		var changes []string
		for i := 0; i < len(out); i += size {
			if got, changed := p.feed(out[i:min(i+size, len(out))]); changed {
				changes = append(changes, got)
			}
		}
		all := []string{"receiving objects 0% (1/4001)", "receiving objects 1% (41/4001)", "receiving objects 99% (3961/4001)",
			"receiving objects 100% (4001/4001)", "resolving deltas 0% (0/12)", "resolving deltas 100% (12/12)"}
		// Every change is one of git's, in order, ending with the last.
		i := 0
		for _, c := range changes {
			for i < len(all) && all[i] != c {
				i++
			}
			if i == len(all) {
				t.Fatalf("in pieces of %d: changes %q are not in git's order %q", size, changes, all)
			}
		}
		if len(changes) == 0 || changes[len(changes)-1] != all[len(all)-1] || (size == 1 && len(changes) != len(all)) {
			t.Errorf("in pieces of %d: changes %q", size, changes)
		}
	}
}

func TestCloneFailure(t *testing.T) {
	out := "Cloning into '.agentd-clone-x'...\nremote: github repository octo/x is not a repository of this sandbox's conversations\n" +
		"fatal: unable to access 'http://127.0.0.1:4000/github/octo/x.git/': The requested URL returned error: 403\n"
	want := "remote: github repository octo/x is not a repository of this sandbox's conversations; " +
		"fatal: unable to access 'http://127.0.0.1:4000/github/octo/x.git/': The requested URL returned error: 403"
	if got := cloneFailure(out); got != want {
		t.Fatalf("cloneFailure: %q", got)
	}
	if got := cloneFailure("something\nwent wrong\n"); got != "something; went wrong" {
		t.Fatalf("without git's prefixes: %q", got)
	}
}

func TestClipMiddle(t *testing.T) {
	if got := clipMiddle("short", 10); got != "short" {
		t.Fatalf("%q", got)
	}
	got := clipMiddle(strings.Repeat("a", 10)+strings.Repeat("b", 10), 10)
	if !strings.HasPrefix(got, "aaaaa\n[... 10 bytes") || !strings.HasSuffix(got, "]\nbbbbb") {
		t.Fatalf("%q", got)
	}
}

func TestValidRepoName(t *testing.T) {
	for repo, ok := range map[string]bool{
		"octo/hello": true, "group/sub/name": true, "PROJ/repo.js": true,
		"hello": false, "octo/": false, "/hello": false, "octo/../x": false, "octo/.": false, "octo/x\n": false,
	} {
		if validRepoName(repo) != ok {
			t.Errorf("validRepoName(%q) = %v", repo, !ok)
		}
	}
}

// TestShellQuote: what the shell reads back is the string quoted, whatever it holds.
func TestShellQuote(t *testing.T) {
	for _, s := range []string{"plain", "it's", `a "b" $c`, "`x`; rm -rf /", "-n", ""} {
		out, err := exec.Command("sh", "-c", "printf %s "+shellQuote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("shellQuote(%q) reads back as %q (%v)", s, out, err)
		}
	}
}
