// Package wire decodes JSON bodies and query strings into Go types with
// FastAPI-style located errors, and describes those types as JSON Schema for
// the OpenAPI document.
//
// agentd serves the OpenHands server API, whose clients were written against
// FastAPI and pydantic v2. They expect a 422 response whose "detail" is a list
// of {type, loc, msg} objects with pydantic's exact wording, and they expect
// every problem in the request at once, not just the first. encoding/json
// stops at the first error and words it for Go programmers, so this package
// parses the input into a generic tree with encoding/json and then walks that
// tree against the destination type itself.
//
// Go types opt into behaviour through struct tags and small interfaces:
//
//   - json:"name" names a body field; query:"name" names a query parameter.
//   - wire:"required,min=1,max=10,minlen=1,maxlen=64,secret,nullable,default=V"
//     adds pydantic-style constraints and schema hints. default= takes the
//     rest of the tag, so it must come last when V holds a comma. secret also
//     marks what [MaskSecrets] masks wherever a request is shown again.
//   - doc:"..." becomes the schema description.
//   - [Enum], [Strict], [Unmarshaler], [Validator] and [Schemer] customise
//     decoding, validation and the schema of a type.
//
// Problems never carry the input value: request bodies hold API keys and
// tokens, and 422 responses end up in client logs.
package wire
