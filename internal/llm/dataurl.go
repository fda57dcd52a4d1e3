package llm

import "strings"

// ParseDataURL splits a base64 data URL ("data:image/png;base64,iVBOR...") into its media
// type and base64 payload. ok is false for anything else, including data URLs that are not
// base64-encoded.
func ParseDataURL(u string) (mediaType, data string, ok bool) {
	rest, found := strings.CutPrefix(u, "data:")
	if !found {
		return "", "", false
	}
	meta, data, found := strings.Cut(rest, ",")
	if !found {
		return "", "", false
	}
	params := strings.Split(meta, ";")
	if params[len(params)-1] != "base64" {
		return "", "", false
	}
	return params[0], data, true
}
