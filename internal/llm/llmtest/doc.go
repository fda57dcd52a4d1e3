// Package llmtest provides scripted model servers for tests: real HTTP servers on loopback
// that speak the OpenAI chat completions protocol (NewOpenAI) or the Anthropic messages
// protocol (NewAnthropic), answer each request with the next step of a script, and record
// what they were sent so that tests can assert on the prompts, tools and images.
//
// Point an adapter, built on the official SDK, at one with Server.Config:
//
//	srv := llmtest.NewOpenAI(t,
//		llmtest.Calls(llmtest.Call("terminal", `{"command":"ls"}`)),
//		llmtest.Text("done"),
//	)
//	c, _ := openai.New(srv.Config("gpt-4o"))
//	resp, err := c.Complete(ctx, req)
//	got := srv.Requests()[0] // model, system text, messages, tools, images, API key
//
// A server whose script runs out answers 500 with a message saying so and fails the test.
// RunClientSuite is the conformance suite every llm.Client adapter runs against these servers.
package llmtest
