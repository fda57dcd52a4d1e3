package webhook

import (
	"net"
	"net/url"
	"strings"
)

// EndpointOf is the endpoint of a webhook's URL: its scheme, host (in lower case) and port
// (the scheme's own when the URL names none). Deliveries to one endpoint of a user's share
// its cap of attempts under way and its pause when it keeps timing out, whatever their paths.
func EndpointOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	scheme, port := strings.ToLower(u.Scheme), u.Port()
	if port == "" {
		port = "80"
		if scheme == "https" {
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}
