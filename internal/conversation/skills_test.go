package conversation

import "testing"

// TestWorkspaceDir: a project directory a client names is taken inside the workspace only.
func TestWorkspaceDir(t *testing.T) {
	for _, tc := range []struct {
		workspace, dir, want string
		bad                  bool
	}{
		{"/workspace", "/workspace", "", false},
		{"/workspace", "/workspace/", "", false},
		{"/workspace", "", "", false},
		{"/workspace", "/workspace/project", "project", false},
		{"/workspace", "project/sub", "project/sub", false},
		{"/workspace", "/workspace/a/../b", "b", false},
		{"/", "/srv", "srv", false},
		{"/workspace", "/etc", "", true},
		{"/workspace", "/workspace-other", "", true},
		{"/workspace", "../etc", "", true},
		{"/workspace", "/workspace/\x00", "", true},
		{"", "/workspace", "", true},
	} {
		got, err := workspaceDir(tc.workspace, tc.dir)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("workspaceDir(%q, %q) = %q, %v; want %q, error %v", tc.workspace, tc.dir, got, err, tc.want, tc.bad)
		}
	}
}
