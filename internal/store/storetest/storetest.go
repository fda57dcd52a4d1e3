// Package storetest is the conformance suite of store.Store. Every implementation (sqlite,
// postgres) runs Run against fresh, empty stores and must pass all of it; behaviour that the
// suite checks is part of the contract.
//
// The suite uses times in whole microseconds and compares JSON values by meaning, so that stores
// with microsecond clocks and re-encoding JSON columns (PostgreSQL's jsonb) can pass it.
package storetest

import (
	"testing"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/store"
)

// Factory makes the stores the suite runs on.
type Factory struct {
	// Open returns a new, empty store for one subtest and arranges, with t.Cleanup, for it to
	// be closed. Subtests run in parallel, so Open is called concurrently.
	Open func(t *testing.T) store.Store
	// Reopen returns a new store over the same data as old, as a restarted server would open
	// it. The suite has already closed old and does not use it again. A nil Reopen skips the
	// persistence test.
	Reopen func(t *testing.T, old store.Store) store.Store
	// Buses returns the buses the feed tests record and follow through, on s: Writer, which
	// the writers record through, and Reader, which the feeds follow through, with
	// ReaderStore, which they read the log from. A store that several replicas share
	// returns a second store on s's data, as a second replica opens it, with a bus of each,
	// so that the feeds follow what another replica writes. nil means one event.LocalBus for
	// both, and s: one process.
	Buses func(t *testing.T, s store.Store) Buses
	// Replica returns a second store on s's data, open beside s, as another replica (or
	// process) opens it, closed when the test ends: what one writes, the other's listings
	// must show at once, whatever either keeps in memory. A nil Replica skips the test.
	Replica func(t *testing.T, s store.Store) store.Store
}

// Buses are the writers' and the readers' sides of a store's fan-out (Factory.Buses).
type Buses struct {
	Writer, Reader event.Bus
	ReaderStore    store.Store
}

func (f Factory) buses(t *testing.T, s store.Store) Buses {
	if f.Buses != nil {
		return f.Buses(t, s)
	}
	var bus event.LocalBus
	return Buses{Writer: &bus, Reader: &bus, ReaderStore: s}
}

// Run runs the whole suite, each subtest on a store of its own.
func Run(t *testing.T, f Factory) {
	if f.Open == nil {
		t.Fatal("storetest: Factory.Open is nil")
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"Users", testUsers},
		{"APIKeys", testAPIKeys},
		{"Sessions", testSessions},
		{"Bootstrap", testBootstrap},
		{"BootstrapAtomic", testBootstrapAtomic},
		{"BootstrapConcurrent", testBootstrapConcurrent},
		{"Settings", testSettings},
		{"ProviderTokens", testProviderTokens},
		{"CustomSecrets", testCustomSecrets},
		{"CustomSecretPaging", testCustomSecretPaging},
		{"Specs", testSpecs},
		{"Sandboxes", testSandboxes},
		{"SandboxListAndCount", testSandboxListAndCount},
		{"SandboxBySessionKeyHash", testSandboxBySessionKeyHash},
		{"SandboxCompareAndSet", testSandboxCompareAndSet},
		{"SandboxNodes", testSandboxNodes},
		{"SandboxLimit", testSandboxLimit},
		{"Reconciler", testReconciler},
		{"SandboxActivity", testSandboxActivity},
		{"SandboxDeleteKeepsConversations", testSandboxDeleteKeepsConversations},
		{"Conversations", testConversations},
		{"ConversationOwnership", testConversationOwnership},
		{"ConversationView", testConversationView},
		{"CreateConversationAtomic", testCreateConversationAtomic},
		{"DeleteConversation", testDeleteConversation},
		{"SubConversations", testSubConversations},
		{"ConversationsOfSandbox", testConversationsOfSandbox},
		{"ConversationMetadata", testConversationMetadata},
		{"ConversationSecrets", testConversationSecrets},
		{"PendingMessages", testPendingMessages},
		{"ConversationFilters", testConversationFilters},
		{"ConversationPaging", testConversationPaging},
		{"ConversationVersions", testConversationVersions},
		{"ConversationPagingWithInserts", testConversationPagingWithInserts},
		{"BadCursor", testBadCursor},
		{"StartTasks", testStartTasks},
		{"StartTaskSort", testStartTaskSort},
		{"PendingStartTasks", testPendingStartTasks},
		{"Events", testEvents},
		{"EventSearch", testEventSearch},
		{"EventBodySearch", testEventBodySearch},
		{"EventOwnership", testEventOwnership},
		{"AppendEventsAtomic", testAppendEventsAtomic},
		{"ConcurrentAppends", testConcurrentAppends},
		{"Feed", func(t *testing.T, s store.Store) { testFeed(t, s, f.buses(t, s)) }},
		{"FeedLagged", func(t *testing.T, s store.Store) { testFeedLagged(t, s, f.buses(t, s)) }},
		{"FeedEnds", func(t *testing.T, s store.Store) { testFeedEnds(t, s, f.buses(t, s)) }},
		{"ListingsSeeOtherWriters", func(t *testing.T, s store.Store) {
			if f.Replica == nil {
				t.Skip("storetest: Factory.Replica is nil")
			}
			testListingsSeeOtherWriters(t, s, f.Replica(t, s))
		}},
		{"RecordEvents", testRecordEvents},
		{"RecordTaskStep", testRecordTaskStep},
		{"ExecutionStatusQueries", testExecutionStatusQueries},
		{"Leases", testLeases},
		{"LeaseFencing", testLeaseFencing},
		{"LeaseClaimRace", testLeaseClaimRace},
		{"Unowned", testUnowned},
		{"Commands", testCommands},
		{"SecretsRevision", testSecretsRevision},
		{"Replicas", testReplicas},
		{"RecordIfStatus", testRecordIfStatus},
		{"RecordIfSecretsRevision", testRecordIfSecretsRevision},
		{"EventSourceFilter", testEventSourceFilter},
		{"UserSkills", testUserSkills},
		{"UserSkillLimit", testUserSkillLimit},
		{"UserSkillPaging", testUserSkillPaging},
		{"ConversationSkills", testConversationSkills},
		{"Webhooks", testWebhooks},
		{"WebhookDeliveries", testWebhookDeliveries},
		{"WebhookClaims", testWebhookClaims},
		{"WebhookFairClaims", testWebhookFairClaims},
		{"WebhookEndpointPause", testWebhookEndpointPause},
		{"Reseal", testReseal},
		{"ResealRollback", testResealRollback},
		{"KeyringCheck", testKeyringCheck},
		{"CanceledWrites", testCanceledWrites},
		{"EventsVisibleInOrder", testEventsVisibleInOrder},
		{"DeleteWhileAppending", testDeleteWhileAppending},
		{"PendingMessagesConcurrent", testPendingMessagesConcurrent},
		{"PendingMessageAndReady", testPendingMessageAndReady},
		{"UserSkillLimitConcurrent", testUserSkillLimitConcurrent},
		{"WebhookLimitConcurrent", testWebhookLimitConcurrent},
		{"CustomSecretLimitConcurrent", testCustomSecretLimitConcurrent},
		{"APIKeyLimitConcurrent", testAPIKeyLimitConcurrent},
		{"WebhookClaimsConcurrent", testWebhookClaimsConcurrent},
		{"WebhookCapsConcurrent", testWebhookCapsConcurrent},
		{"PRNumbersConcurrent", testPRNumbersConcurrent},
		{"ProviderTokensConcurrent", testProviderTokensConcurrent},
		{"ResealWhileWriting", testResealWhileWriting},
		{"JSONKept", testJSONKept},
		{"ByteOrder", testByteOrder},
		{"OddText", testOddText},
		{"Counts", testCounts},
		{"Ping", testPing},
		{"CloseTwice", testCloseTwice},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, f.Open(t))
		})
	}
	t.Run("Persistence", func(t *testing.T) {
		if f.Reopen == nil {
			t.Skip("storetest: Factory.Reopen is nil")
		}
		t.Parallel()
		testPersistence(t, f)
	})
}
