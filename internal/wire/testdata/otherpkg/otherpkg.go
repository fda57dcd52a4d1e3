// Package otherpkg holds a type whose name collides with one in the wire
// tests, to exercise component naming.
package otherpkg

// Config is deliberately named like wire's test type Config.
type Config struct {
	Enabled bool `json:"enabled"`
}
