package httpapi

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentd/agentd/internal/netpolicy"
)

// checkUserURL validates a URL the caller supplies for agentd to connect to (field names it
// in the body, below parents), before it is stored: it must be an http(s) URL, and one the URL policy lets
// the caller reach, so the caller learns now which rule refuses it rather than from a failed
// run. Connections are checked again when they are made. Empty clears the setting.
func (a *API) checkUserURL(r *http.Request, raw, field string, parents ...any) error {
	loc := append(append([]any{"body"}, parents...), field)
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return problem("value_error", "Value error, URL must start with http:// or https:// and name a host", loc...)
	}
	err = a.d.URLs.CheckURL(r.Context(), raw, caller(r).IsAdmin)
	var refused *netpolicy.RefusedError
	if errors.As(err, &refused) {
		return problem("value_error", "Value error, "+refused.Explain(field), loc...)
	}
	var shorthand *netpolicy.ShorthandError
	if errors.As(err, &shorthand) {
		return problem("value_error", "Value error, "+field+": "+shorthand.Error(), loc...)
	}
	return err
}
