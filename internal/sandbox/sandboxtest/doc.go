// Package sandboxtest holds the conformance suite every sandbox backend passes (Run), and the
// test doubles the sandbox tests share: an in-memory Store, a Sealer, and a way for a test
// binary to serve as the agentd runtime.
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
