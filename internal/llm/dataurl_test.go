package llm

import "testing"

func TestParseDataURL(t *testing.T) {
	for _, tc := range []struct {
		url             string
		mediaType, data string
		ok              bool
	}{
		{"data:image/png;base64,iVBORw0KGgo=", "image/png", "iVBORw0KGgo=", true},
		{"data:image/jpeg;charset=binary;base64,/9j/4AAQ", "image/jpeg", "/9j/4AAQ", true},
		{"data:text/plain,hello", "", "", false},
		{"data:image/png;base64", "", "", false},
		{"https://example.com/a.png", "", "", false},
	} {
		mt, data, ok := ParseDataURL(tc.url)
		if mt != tc.mediaType || data != tc.data || ok != tc.ok {
			t.Errorf("ParseDataURL(%q) = %q %q %v, want %q %q %v", tc.url, mt, data, ok, tc.mediaType, tc.data, tc.ok)
		}
	}
}
