package gitprovider

import (
	"fmt"
	"testing"
)

// TestFamiliesMakeRoom: hosts found once the families remembered are at their bound take the
// place of others, so the newest is always remembered and the count stays at the bound.
func TestFamiliesMakeRoom(t *testing.T) {
	var f families
	for i := range maxRemembered + 100 {
		root := fmt.Sprintf("https://git%d.example", i)
		f.put(root, FamilyGitLab)
		if fam, ok := f.get(root); !ok || fam != FamilyGitLab {
			t.Fatalf("host %d of %d: not remembered just after it was found", i+1, maxRemembered+100)
		}
	}
	if len(f.m) != maxRemembered {
		t.Fatalf("%d hosts remembered, want %d", len(f.m), maxRemembered)
	}
	f.put("https://git0.example", FamilyGitHub) // found again, maybe put out meanwhile
	if fam, _ := f.get("https://git0.example"); fam != FamilyGitHub || len(f.m) != maxRemembered {
		t.Fatalf("host found again: %q, %d remembered", fam, len(f.m))
	}
}
