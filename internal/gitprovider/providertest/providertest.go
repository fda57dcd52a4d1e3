// Package providertest runs loopback HTTP servers that speak the REST APIs of the git
// providers agentd calls (GitHub and GitHub Enterprise, GitLab, Bitbucket Cloud, Bitbucket
// Data Center), in the shapes of their public API documentation, for the calls agentd makes.
// Each demands a token it was given, holds state a test sets (users, repositories, branches,
// issues, pull requests) and lets the test inspect what agentd did (pull requests opened,
// requests made). They stand in for internet services only.
package providertest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// User is an account at the provider.
type User struct {
	ID    int
	Login string
	Name  string
	// Email is the account's primary address; "" when the provider will not tell it.
	Email string
	// Company is the profile's company (GitLab: organization); Bitbucket has none.
	Company string
	// Installations are the ids of the GitHub App installations the user's token may use;
	// nil makes the token no GitHub App user token, which GitHub refuses to list them (403).
	Installations []int64
}

// Repo is a repository. The default branch is one of its branches whether listed or not.
type Repo struct {
	FullName      string
	DefaultBranch string // "main" when empty
	Branches      []string
	// Private repositories are seen only by their Members (logins); others by every user.
	Private      bool
	Members      []string
	Organization bool
	Stars        int
	PushedAt     time.Time
	// CloneURL is the git URL the API reports; empty means <server root>/<full name>.git.
	CloneURL string
}

// Comment is a comment on an issue or pull request; one with a Path is a review comment
// on the diff, which may be resolved.
type Comment struct {
	Author   string
	Body     string
	Path     string
	Line     int
	Resolved bool
}

// Issue is an issue of a repository.
type Issue struct {
	Repo      string
	Number    int
	Title     string
	Body      string
	Author    string
	Assignees []string
	Closed    bool
	Comments  []Comment
}

// Check is one CI result on a pull request's head commit: state success, failure or pending.
type Check struct {
	Name  string
	State string
}

// Review is a reviewer's verdict: state approved, changes_requested or commented.
type Review struct {
	Author string
	State  string
	Body   string
}

// PullRequest is a pull (merge) request. Number 0 takes the repository's next number.
type PullRequest struct {
	Repo      string
	Number    int
	Title     string
	Body      string
	Author    string
	Head      string
	Base      string
	HeadSHA   string
	Draft     bool
	Closed    bool
	Conflicts bool
	Checks    []Check
	Reviews   []Review
	Comments  []Comment
}

// Server is one provider's API on loopback. Safe for concurrent use.
type Server struct {
	// Family is the API it speaks: github, gitlab, bitbucket or bitbucket_data_center.
	Family string
	srv    *httptest.Server
	prefix string

	mu       sync.Mutex
	users    map[string]User // token → user
	repos    []*Repo
	issues   []*Issue
	pulls    []*PullRequest
	created  []PullRequest
	requests []string
	numbers  map[string]int // repository → last issue or pull request number
	// failing is the status every request answers while it is not 0 (see Fail).
	failing int
}

// Cleaner is what a server needs of its user: a *testing.T, or a benchmark's own list of
// things to close. The server closes with it.
type Cleaner interface{ Cleanup(func()) }

func newServer(t Cleaner, family, prefix string, routes func(s *Server, mux *http.ServeMux)) *Server {
	s := &Server{Family: family, prefix: prefix, users: map[string]User{}, numbers: map[string]int{}}
	mux := http.NewServeMux()
	routes(s, mux)
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.Method+" "+r.URL.Path)
		failing := s.failing
		s.mu.Unlock()
		if failing != 0 {
			http.Error(w, http.StatusText(failing), failing)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// Root is the server's root URL (http://127.0.0.1:port), what a user gives as its host.
func (s *Server) Root() string { return s.srv.URL }

// APIURL is the base URL of its API, what the server's configuration names.
func (s *Server) APIURL() string { return s.srv.URL + s.prefix }

// AddUser makes token the user's.
func (s *Server) AddUser(token string, u User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u.ID == 0 {
		u.ID = 1000 + len(s.users)
	}
	if u.Name == "" {
		u.Name = u.Login
	}
	s.users[token] = u
}

// AddRepo adds a repository.
func (s *Server) AddRepo(r Repo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.DefaultBranch == "" {
		r.DefaultBranch = "main"
	}
	if !slices.Contains(r.Branches, r.DefaultBranch) {
		r.Branches = append([]string{r.DefaultBranch}, r.Branches...)
	}
	if r.PushedAt.IsZero() {
		r.PushedAt = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(len(s.repos)) * time.Hour)
	}
	s.repos = append(s.repos, &r)
}

// AddBranch adds a branch to a repository (as a push would).
func (s *Server) AddBranch(repo, branch string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.repo(repo); r != nil && !slices.Contains(r.Branches, branch) {
		r.Branches = append(r.Branches, branch)
	}
}

// AddIssue adds an issue and returns its number.
func (s *Server) AddIssue(i Issue) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i.Number == 0 {
		i.Number = s.next(i.Repo)
	}
	s.issues = append(s.issues, &i)
	return i.Number
}

// AddPullRequest adds a pull request and returns its number.
func (s *Server) AddPullRequest(p PullRequest) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.Number == 0 {
		p.Number = s.next(p.Repo)
	}
	if p.HeadSHA == "" {
		p.HeadSHA = fmt.Sprintf("%040x", len(s.pulls)+1)
	}
	s.pulls = append(s.pulls, &p)
	return p.Number
}

// Fail makes every request answer status, as a provider that is down does (503), until
// Fail(0).
func (s *Server) Fail(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing = status
}

// Created returns the pull requests opened through the API, in order.
func (s *Server) Created() []PullRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.created)
}

// Requests returns "METHOD /path" of every request received, in order.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

func (s *Server) next(repo string) int {
	s.numbers[repo]++
	return s.numbers[repo]
}

// Lookups; the caller holds s.mu.

func (s *Server) repo(name string) *Repo {
	for _, r := range s.repos {
		if strings.EqualFold(r.FullName, name) {
			return r
		}
	}
	return nil
}

// visibleRepo is the repository if u may see it.
func (s *Server) visibleRepo(u User, name string) *Repo {
	r := s.repo(name)
	if r == nil || r.Private && !slices.Contains(r.Members, u.Login) {
		return nil
	}
	return r
}

func (s *Server) visibleRepos(u User) []*Repo {
	var out []*Repo
	for _, r := range s.repos {
		if s.visibleRepo(u, r.FullName) != nil {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b *Repo) int { return b.PushedAt.Compare(a.PushedAt) })
	return out
}

func (s *Server) issue(repo string, n int) *Issue {
	for _, i := range s.issues {
		if strings.EqualFold(i.Repo, repo) && i.Number == n {
			return i
		}
	}
	return nil
}

func (s *Server) pull(repo string, n int) *PullRequest {
	for _, p := range s.pulls {
		if strings.EqualFold(p.Repo, repo) && p.Number == n {
			return p
		}
	}
	return nil
}

// open adds a pull request made through the API; the caller holds s.mu.
func (s *Server) open(p PullRequest) *PullRequest {
	p.Number = s.next(p.Repo)
	p.HeadSHA = fmt.Sprintf("%040x", 1<<20+len(s.pulls))
	s.pulls = append(s.pulls, &p)
	s.created = append(s.created, p)
	return &p
}

func (s *Server) cloneURL(r *Repo) string {
	if r.CloneURL != "" {
		return r.CloneURL
	}
	return s.srv.URL + "/" + r.FullName + ".git"
}

// userOf returns the token's user; the second result is false for a missing or unknown
// token. bearer and basic say which Authorization forms the family takes.
func (s *Server) userOf(r *http.Request, extraHeader string) (User, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	auth := r.Header.Get("Authorization")
	if tok, ok := strings.CutPrefix(auth, "Bearer "); ok {
		u, found := s.users[tok]
		return u, found
	}
	if tok, ok := strings.CutPrefix(auth, "token "); ok && s.Family == "github" {
		u, found := s.users[tok]
		return u, found
	}
	if user, pass, ok := r.BasicAuth(); ok && s.Family == "bitbucket" {
		u, found := s.users[user+":"+pass]
		return u, found
	}
	if extraHeader != "" {
		if tok := r.Header.Get(extraHeader); tok != "" {
			u, found := s.users[tok]
			return u, found
		}
	}
	return User{}, false
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// paginate returns page (from 1) of perPage items and whether more follow.
func paginate[T any](items []T, page, perPage int) ([]T, bool) {
	if page < 1 {
		page = 1
	}
	if perPage < 1 {
		perPage = 30
	}
	start := (page - 1) * perPage
	if start >= len(items) {
		return []T{}, false
	}
	end := min(start+perPage, len(items))
	return items[start:end], end < len(items)
}

func intParam(r *http.Request, name string, def int) int {
	if n, err := strconv.Atoi(r.URL.Query().Get(name)); err == nil {
		return n
	}
	return def
}

func decode(r *http.Request, v any) error {
	return json.NewDecoder(r.Body).Decode(v)
}
