// Package sandboxtest holds the conformance suite every sandbox backend passes (Run), and what
// the sandbox tests share: an in-memory Store, a Sealer, a way for a test binary to serve as
// the agentd runtime, and starts (TryStart, StartSandbox, DestroyAllAtCleanup) that leave no
// sandbox behind when a test fails.
//
// The suite ends with the escape suite (escape.go): what a hostile agent would try from inside
// a sandbox of the default network and limits, each probe failing if its escape works. Backends
// that confine their sandboxes (Options.Confines) run it; where one is known to fail a probe,
// Options.KnownEscapes says why and the probe is skipped with that reason.
//
// The suite is the one home of the backend contract: what every backend must do is checked
// there, in terms of sandbox.Backend, and a backend's own tests keep only what is its alone
// (its arguments, cgroups, container settings). Where a check needs to know something of the
// backend (where it keeps a sandbox's directory, how to make a start fail), Options says it.
//
// # The runtime binary in tests
//
// Sandboxes start `agentd runtime`. A test does not build cmd/agentd; instead the test binary
// itself plays the runtime. The test package's TestMain calls RuntimeMain:
//
//	func TestMain(m *testing.M) { sandboxtest.RuntimeMain(m) }
//
// and the backend is given the test binary (Binary) as its agentd executable, with specs made
// by RuntimeSpec. Those specs set EnvRuntime=1 in the sandbox's initial environment; when the
// test binary starts with it set, RuntimeMain runs runtime.Main with the arguments that follow
// "runtime" instead of the tests, and exits.
package sandboxtest
