package secret

import (
	"strings"
	"sync"
)

// Mask replaces a secret value wherever it would be shown.
const Mask = "<secret-hidden>"

// minRedactLen keeps very short values from masking ordinary words.
const minRedactLen = 6

// Redactor masks known secret values in text. Safe for concurrent use.
type Redactor struct {
	mu     sync.RWMutex
	values map[string]struct{}
}

// NewRedactor returns an empty redactor.
func NewRedactor() *Redactor { return &Redactor{values: map[string]struct{}{}} }

// Add registers secret values to mask. Values shorter than six characters are ignored.
func (r *Redactor) Add(values ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range values {
		if len(v) >= minRedactLen {
			r.values[v] = struct{}{}
		}
	}
}

// Redact returns s with every registered value replaced by Mask.
func (r *Redactor) Redact(s string) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for v := range r.values {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, Mask)
		}
	}
	return s
}
