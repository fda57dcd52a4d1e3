package gitprovider

import (
	"errors"
	"fmt"
)

// The kinds of failure a provider call ends in. Every error the package returns for a provider
// call is an *Error whose Kind is one of these, so callers pick a status with errors.Is.
var (
	// ErrNoToken: the user stored no token for the provider (or none at all).
	ErrNoToken = errors.New("no provider token")
	// ErrTokenRefused: the provider did not accept the token (HTTP 401).
	ErrTokenRefused = errors.New("provider token refused")
	// ErrNotFound: the repository, issue or pull request does not exist, or the token may not
	// see it; providers answer both the same way on purpose.
	ErrNotFound = errors.New("not found at the provider")
	// ErrForbidden: the token is accepted but may not do this.
	ErrForbidden = errors.New("forbidden by the provider")
	// ErrRejected: the provider refused the request itself (a pull request that exists
	// already, a branch it does not know); the message carries the provider's words.
	ErrRejected = errors.New("rejected by the provider")
	// ErrUnavailable: the provider could not be reached, failed, answered something that is
	// not its API, or its rate limit for the token is spent.
	ErrUnavailable = errors.New("provider unavailable")
	// ErrBadHost: the provider's host cannot be used: malformed, plain http where the URL
	// policy does not admit it, missing for enterprise_sso, or serving none of the APIs.
	ErrBadHost = errors.New("unusable provider host")
	// ErrBadRepository: a repository name that no provider could hold.
	ErrBadRepository = errors.New("malformed repository name")
	// ErrUnsupported: the provider's API does not offer the operation (issues on Bitbucket
	// Data Center, which leaves them to Jira).
	ErrUnsupported = errors.New("not offered by the provider")
)

// Error is a failed provider operation. Msg is written for the user and holds no internal
// text; Error() adds the cause for the log. Neither ever holds a token: tokens travel only in
// request headers, which no error quotes.
type Error struct {
	// Provider is the user's name for the provider (github, gitlab, bitbucket, enterprise_sso).
	Provider string
	Kind     error
	Msg      string
	cause    error
}

func (e *Error) Error() string {
	if e.cause == nil {
		return e.Msg
	}
	return e.Msg + ": " + e.cause.Error()
}

// Unwrap exposes the kind and the cause (a *netpolicy.RefusedError, for one).
func (e *Error) Unwrap() []error {
	if e.cause == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.cause}
}

// ClientMessage is the message for the user.
func (e *Error) ClientMessage() string { return e.Msg }

func newError(provider string, kind error, cause error, format string, args ...any) *Error {
	return &Error{Provider: provider, Kind: kind, Msg: fmt.Sprintf(format, args...), cause: cause}
}
