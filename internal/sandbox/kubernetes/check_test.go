package kubernetes

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestPermissionsDocumented: the Role in docs/configuration.md grants what the start-up check
// asks for (Permissions), no more and no less, so an operator who copies it passes the check.
func TestPermissionsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	_, role, ok := strings.Cut(string(doc), "kind: Role\n")
	if !ok {
		t.Fatal("docs/configuration.md has no Role")
	}
	role, _, _ = strings.Cut(role, "```")
	list := regexp.MustCompile(`^\s*-?\s*(apiGroups|resources|verbs): \[([^\]]*)\]`)
	var documented []string
	var group, resource string
	for _, line := range strings.Split(role, "\n") {
		m := list.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		items := strings.Split(m[2], ",")
		for i := range items {
			items[i] = strings.Trim(strings.TrimSpace(items[i]), `"`)
		}
		switch m[1] {
		case "apiGroups":
			group = items[0]
		case "resources":
			resource = items[0]
		case "verbs":
			for _, v := range items {
				documented = append(documented, v+" "+qualified(resource, group))
			}
		}
	}
	var want []string
	for _, p := range Permissions {
		for _, v := range p.Verbs {
			want = append(want, v+" "+p.String())
		}
	}
	slices.Sort(documented)
	slices.Sort(want)
	if !slices.Equal(documented, want) {
		t.Fatalf("the documented Role grants\n%q\nthe check asks for\n%q", documented, want)
	}
}

// qualified writes a resource of an API group as Permission.String does.
func qualified(resource, group string) string {
	if group != "" {
		return resource + "." + group
	}
	return resource
}
