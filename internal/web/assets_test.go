package web

import (
	"strings"
	"testing"
)

// TestAssetTypes: each embedded asset is served with its content type, which browsers check
// before they run a script or apply a style sheet.
func TestAssetTypes(t *testing.T) {
	as, err := loadAssets()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{as.CSS: "text/css; charset=utf-8", as.JS: "text/javascript; charset=utf-8", as.Icon: "image/svg+xml"}
	for served, ctype := range want {
		a := as.byName[strings.TrimPrefix(served, "/assets/")]
		if a == nil || a.contentType != ctype {
			t.Errorf("%s: %+v, want content type %q", served, a, ctype)
		}
	}
}
