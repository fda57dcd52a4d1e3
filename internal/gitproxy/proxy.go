package gitproxy

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/gitprovider"
	"github.com/agentd/agentd/internal/secret"
)

// proxy serves the git requests of one sandbox, arriving on its channel.
type proxy struct {
	s              *Service
	owner, sandbox string
}

// requestHeaders are the headers of git's requests passed upstream; the rest (credentials
// above all) stay behind.
var requestHeaders = []string{
	"Accept", "Accept-Encoding", "Accept-Language", "Content-Type", "Content-Encoding",
	"Git-Protocol", "Pragma", "User-Agent",
}

// dropResponseHeaders are the headers of the provider's answers that git in the sandbox
// does not get: the connection's own, cookies, and credential challenges, which would make
// git ask for a password the sandbox must not have.
var dropResponseHeaders = []string{
	"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding",
	"Upgrade", "Set-Cookie", "Www-Authenticate", "Proxy-Authenticate",
}

// maxErrorBody bounds the failed answer read to mask it; the rest is dropped.
const maxErrorBody = 64 << 10

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	log := p.s.log.With("sandbox_id", p.sandbox, "method", r.Method, "path", r.URL.Path)
	t, err := parseTarget(r.URL.Path, r.URL.Query())
	if err != nil {
		log.Warn("git proxy: refused", "reason", err)
		refuse(w, http.StatusNotFound, "agentd serves git's smart HTTP for the conversation's repositories only")
		return
	}
	if want := map[string]string{infoRefs: http.MethodGet, uploadPack: http.MethodPost, receivePack: http.MethodPost}[t.Endpoint]; r.Method != want {
		refuse(w, http.StatusMethodNotAllowed, t.Endpoint[1:]+" takes "+want)
		return
	}
	log = log.With("repository", t.Repository, "service", t.Service)
	ok, err := p.s.match(r.Context(), p.owner, p.sandbox, t)
	if err != nil {
		log.Error("git proxy: list the sandbox's repositories", "err", err)
		refuse(w, http.StatusBadGateway, "agentd could not look up the conversation's repositories")
		return
	}
	if !ok {
		log.Warn("git proxy: refused a repository the sandbox's conversations do not name")
		refuse(w, http.StatusForbidden, t.Provider+" repository "+t.Repository+" is not a repository of this sandbox's conversations")
		return
	}
	remote, err := p.s.o.Remotes.Remote(r.Context(), p.owner, t.Provider, t.Repository)
	if err != nil {
		log.Warn("git proxy: no remote", "err", err)
		refuse(w, http.StatusForbidden, remoteProblem(err, t))
		return
	}
	up, err := p.upstream(r, t, remote)
	if err != nil {
		log.Error("git proxy: build the upstream request", "err", err)
		refuse(w, http.StatusBadGateway, "agentd could not reach the git provider")
		return
	}
	client, err := p.s.o.HTTP(r.Context(), p.owner)
	if err != nil {
		log.Error("git proxy: HTTP client", "err", err)
		refuse(w, http.StatusBadGateway, "agentd could not reach the git provider")
		return
	}
	resp, err := client.Do(up)
	if err != nil {
		if r.Context().Err() == nil {
			log.Warn("git proxy: upstream", "upstream", remote.URL.Redacted(), "err", err)
		}
		refuse(w, http.StatusBadGateway, "agentd could not reach the git provider at "+remote.URL.Host)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		p.failed(w, resp, remote, t)
		log.Warn("git proxy: the provider refused", "upstream", remote.URL.Redacted(), "status", resp.StatusCode)
		return
	}
	h := w.Header()
	for k, vs := range resp.Header {
		h[k] = vs
	}
	for _, k := range dropResponseHeaders {
		h.Del(k)
	}
	w.WriteHeader(resp.StatusCode)
	n, err := copyFlushing(w, resp.Body)
	log.Info("git proxy", "status", resp.StatusCode, "bytes", n, "duration", time.Since(start), "err", err)
}

// upstream is r sent to the provider, with the remote's credentials.
func (p *proxy) upstream(r *http.Request, t target, remote gitprovider.Remote) (*http.Request, error) {
	if remote.URL == nil {
		return nil, errors.New("the remote has no URL")
	}
	u := *remote.URL
	u.User = nil
	u.Path = strings.TrimSuffix(u.Path, "/") + t.Endpoint
	u.RawPath = ""
	u.RawQuery = r.URL.RawQuery
	u.Fragment = ""
	body := r.Body
	if r.ContentLength == 0 {
		body = http.NoBody
	}
	up, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), body)
	if err != nil {
		return nil, err
	}
	up.ContentLength = r.ContentLength
	for _, k := range requestHeaders {
		if vs := r.Header.Values(k); len(vs) > 0 {
			up.Header[k] = vs
		}
	}
	if remote.Authorization != "" {
		up.Header.Set("Authorization", remote.Authorization)
	}
	return up, nil
}

// failed passes on a failed answer of the provider, its body masked for the credentials,
// and with 401 made 403 so that git gives up instead of asking for a password.
func (p *proxy) failed(w http.ResponseWriter, resp *http.Response, remote gitprovider.Remote, t target) {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	text := secret.NewRedactor(credentialForms(remote.Authorization)...).Redact(string(body))
	status := resp.StatusCode
	if status == http.StatusUnauthorized {
		status = http.StatusForbidden
		text = fmt.Sprintf("%s refused agentd's credentials for %s: check the token stored for %s", remote.URL.Host, t.Repository, remote.Provider)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, text)
}

// credentialForms are the forms the credentials of an Authorization value may be echoed in:
// the value, its token, and for Basic the decoded pair and its password.
func credentialForms(authorization string) []string {
	out := []string{authorization}
	_, cred, ok := strings.Cut(authorization, " ")
	if !ok {
		return out
	}
	out = append(out, cred)
	if strings.HasPrefix(strings.ToLower(authorization), "basic ") {
		if pair, err := base64.StdEncoding.DecodeString(cred); err == nil {
			out = append(out, string(pair))
			if _, pass, ok := strings.Cut(string(pair), ":"); ok {
				out = append(out, pass)
			}
		}
	}
	return out
}

// remoteProblem words why the repository has no remote, for git to show.
func remoteProblem(err error, t target) string {
	var cm interface{ ClientMessage() string }
	if errors.As(err, &cm) {
		return cm.ClientMessage()
	}
	return t.Provider + " repository " + t.Repository + " cannot be reached with your provider tokens"
}

// refuse answers git with a message it shows (git prints a text/plain body of a failed
// answer as the remote's message).
func refuse(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg+"\n")
}

// copyFlushing copies src to w, flushing after each read so that git's progress reaches the
// sandbox as it comes. It returns the bytes copied.
func copyFlushing(w http.ResponseWriter, src io.Reader) (int64, error) {
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	var total int64
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return total, werr
			}
			total += int64(n)
			if ferr := rc.Flush(); ferr != nil {
				return total, ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}
