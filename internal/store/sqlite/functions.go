package sqlite

import (
	"database/sql/driver"
	"strings"
	"sync"

	msqlite "modernc.org/sqlite"

	"github.com/agentd/agentd/internal/event"
)

// SQL functions agentd adds to SQLite. They are registered on the driver that sql.Open
// uses, once per process, before Open opens its first connection: a function reaches only
// connections opened after its registration.

// bodyTextFunc is agentd_body_text(kind, body): event.BodyText in lower case, so that a
// body filter matches without regard to case beyond ASCII, which SQLite's lower() folds
// alone.
const bodyTextFunc = "agentd_body_text"

var (
	registerOnce sync.Once
	registerErr  error
)

func registerFunctions() error {
	registerOnce.Do(func() {
		registerErr = msqlite.RegisterDeterministicScalarFunction(bodyTextFunc, 2,
			func(_ *msqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
				return strings.ToLower(event.BodyText(textArg(args[0]), []byte(textArg(args[1])))), nil
			})
	})
	return registerErr
}

// textArg reads a TEXT or BLOB argument; NULL and other types read as "".
func textArg(v driver.Value) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	return ""
}
