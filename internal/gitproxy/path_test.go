package gitproxy

import (
	"net/url"
	"testing"
)

func TestParseTarget(t *testing.T) {
	upload := url.Values{"service": {"git-upload-pack"}}
	receive := url.Values{"service": {"git-receive-pack"}}
	tests := []struct {
		name  string
		path  string
		query url.Values
		want  target
		ok    bool
	}{
		{"refs for a fetch", "/github/octo/hello.git/info/refs", upload,
			target{"github", "octo/hello", infoRefs, serviceUploadPack}, true},
		{"refs for a push", "/github/octo/hello.git/info/refs", receive,
			target{"github", "octo/hello", infoRefs, serviceReceivePack}, true},
		{"fetch", "/gitlab/group/sub/name.git/git-upload-pack", nil,
			target{"gitlab", "group/sub/name", uploadPack, serviceUploadPack}, true},
		{"push", "/bitbucket/PROJ/repo.git/git-receive-pack", nil,
			target{"bitbucket", "PROJ/repo", receivePack, serviceReceivePack}, true},
		{"a name with .git inside", "/github/octo/a.git.b.git/git-upload-pack", nil,
			target{"github", "octo/a.git.b", uploadPack, serviceUploadPack}, true},
		{"the dumb protocol", "/github/octo/hello.git/info/refs", nil, target{}, false},
		{"another service", "/github/octo/hello.git/info/refs", url.Values{"service": {"git-upload-archive"}}, target{}, false},
		{"objects", "/github/octo/hello.git/objects/info/packs", nil, target{}, false},
		{"no .git", "/github/octo/hello/git-upload-pack", nil, target{}, false},
		{"no owner", "/github/hello.git/git-upload-pack", nil, target{}, false},
		{"no provider", "/octo.git/git-upload-pack", nil, target{}, false},
		{"dot dot", "/github/octo/../hello.git/git-upload-pack", nil, target{}, false},
		{"empty segment", "/github/octo//hello.git/git-upload-pack", nil, target{}, false},
		{"root", "/", nil, target{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseTarget(tt.path, tt.query)
			if (err == nil) != tt.ok || got != tt.want {
				t.Fatalf("parseTarget(%q) = %+v, %v; want %+v ok=%v", tt.path, got, err, tt.want, tt.ok)
			}
		})
	}
}

func TestCredentialForms(t *testing.T) {
	// "x-access-token:s3cret-token" in base64.
	got := credentialForms("Basic eC1hY2Nlc3MtdG9rZW46czNjcmV0LXRva2Vu")
	want := []string{"Basic eC1hY2Nlc3MtdG9rZW46czNjcmV0LXRva2Vu", "eC1hY2Nlc3MtdG9rZW46czNjcmV0LXRva2Vu",
		"x-access-token:s3cret-token", "s3cret-token"}
	if len(got) != len(want) {
		t.Fatalf("forms %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("forms %q, want %q", got, want)
		}
	}
	if got := credentialForms("Bearer tok-123456"); len(got) != 2 || got[1] != "tok-123456" {
		t.Fatalf("bearer forms %q", got)
	}
}
