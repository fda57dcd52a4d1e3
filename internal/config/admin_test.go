package config

import "testing"

func TestAdminAddr(t *testing.T) {
	for _, tc := range []struct {
		name      string
		args      []string
		env       map[string]string
		addr, err string
	}{
		{name: "off by default"},
		{name: "given", args: []string{"--admin-addr", "127.0.0.1:9090"}, addr: "127.0.0.1:9090"},
		{name: "from the environment", env: map[string]string{"AGENTD_ADMIN_ADDR": " [::1]:9090 "}, addr: "[::1]:9090"},
		{name: "malformed", args: []string{"--admin-addr", "nine"}, err: "admin addr \"nine\": want host:port"},
		{name: "the main address", args: []string{"--admin-addr", "127.0.0.1:3000"}, err: "the main server listens there"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := loadCase(t, tc.args, env(tc.env), tc.err)
			if !ok {
				return
			}
			if c.AdminAddr != tc.addr {
				t.Fatalf("admin addr %q, want %q", c.AdminAddr, tc.addr)
			}
		})
	}
}

func TestSQLiteCacheSize(t *testing.T) {
	testSize(t, func(c Config) int64 { return c.SQLiteCacheBytes }, []sizeCase{
		{name: "default", want: 4 << 20},
		{name: "given", args: []string{"--sqlite-cache-size", "16MiB"}, want: 16 << 20},
		{name: "environment", env: map[string]string{"AGENTD_SQLITE_CACHE_SIZE": "512KiB"}, want: 512 << 10},
		{name: "off", args: []string{"--sqlite-cache-size", "off"}, err: "cannot be off"},
		{name: "zero", args: []string{"--sqlite-cache-size", "0"}, err: "not a size"},
	})
}

func TestListingCacheSize(t *testing.T) {
	testSize(t, func(c Config) int64 { return c.ListingCacheBytes }, []sizeCase{
		{name: "default", want: 2 << 20},
		{name: "given", args: []string{"--listing-cache-size", "8MiB"}, want: 8 << 20},
		{name: "environment", env: map[string]string{"AGENTD_LISTING_CACHE_SIZE": "512KiB"}, want: 512 << 10},
		{name: "off", args: []string{"--listing-cache-size", "off"}, want: 0},
		{name: "zero", args: []string{"--listing-cache-size", "0"}, err: "not a size"},
	})
}

// sizeCase is a setting of a size in bytes, by flag or environment, and the size it loads as
// (or the error it fails with).
type sizeCase struct {
	name string
	args []string
	env  map[string]string
	want int64
	err  string
}

// testSize runs cases, reading the size each loads as with get.
func testSize(t *testing.T, get func(Config) int64, cases []sizeCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := loadCase(t, tc.args, env(tc.env), tc.err)
			if !ok {
				return
			}
			if got := get(c); got != tc.want {
				t.Fatalf("size %d, want %d", got, tc.want)
			}
		})
	}
}

func TestMemoryLimit(t *testing.T) {
	testSize(t, func(c Config) int64 { return c.MemoryLimit }, []sizeCase{
		{name: "default", want: MemoryLimitAuto},
		{name: "given", args: []string{"--memory-limit", "2GiB"}, want: 2 << 30},
		{name: "auto", env: map[string]string{"AGENTD_MEMORY_LIMIT": "auto"}, want: MemoryLimitAuto},
		{name: "GOMEMLIMIT left to the runtime", env: map[string]string{"GOMEMLIMIT": "536870912"}, want: 0},
		{name: "GOMEMLIMIT and ours", env: map[string]string{"AGENTD_MEMORY_LIMIT": "128MiB", "GOMEMLIMIT": "1GiB"}, err: "AGENTD_MEMORY_LIMIT and GOMEMLIMIT are both set"},
		{name: "GOMEMLIMIT and the flag", args: []string{"--memory-limit", "1GiB"}, env: map[string]string{"GOMEMLIMIT": "1GiB"}, err: "--memory-limit and GOMEMLIMIT are both set"},
		{name: "off", args: []string{"--memory-limit", "off"}, want: 0},
		{name: "no unit we know", args: []string{"--memory-limit", "96MB"}, err: "not a size"},
		{name: "zero", args: []string{"--memory-limit", "0"}, err: "not a size"},
	})
}
