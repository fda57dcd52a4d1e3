package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/customsecret"
	"github.com/agentd/agentd/internal/gitprovider"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/skill"
	"github.com/agentd/agentd/internal/store"
	"github.com/agentd/agentd/internal/webhook"
)

// Operations that read and then write on the strength of what they read (a count under a
// limit, a list to extend, the due deliveries) stay right when callers race: a store whose
// transactions see a snapshot without locking what they read would let two callers both act
// on the same reading. Each test starts its callers together and checks the invariant after.

// race runs fn(i) for i in [0, n) on n goroutines released together, and returns their errors.
func race(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = fn(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// winners checks that exactly want of errs are nil and that the others are refused, and
// returns the indexes of the nil ones.
func winners(t *testing.T, what string, errs []error, want int, refused error) []int {
	t.Helper()
	var won []int
	for i, err := range errs {
		switch {
		case err == nil:
			won = append(won, i)
		case !errors.Is(err, refused):
			t.Fatalf("%s %d: got %v, want success or %v", what, i, err, refused)
		}
	}
	if len(won) != want {
		t.Fatalf("%s: %d succeeded, want %d", what, len(won), want)
	}
	return won
}

// rounds is how many times the tests of limits race: a race that a store loses only now and
// then is lost within a few rounds.
const rounds = 5

// testPendingMessagesConcurrent: of messages queued at once past the bound, exactly as many
// as the bound are queued, each at its own place.
func testPendingMessagesConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	const n, max = 12, 5
	for r := range rounds {
		c := newConversation(ownerA, fmt.Sprintf("conv-%d", r), 1)
		createConversation(t, s, c)
		places := make([]int, n)
		errs := race(n, func(i int) error {
			var err error
			places[i], err = s.AddPendingMessage(ctx, ownerA, conversation.PendingMessage{ID: fmt.Sprintf("pm-%d-%02d", r, i),
				ConversationID: c.ID, Message: conversation.Message{Text: "hi"}, CreatedAt: at(2)}, max)
			return err
		})
		var got []int
		for _, i := range winners(t, "queue", errs, max, conversation.ErrTooManyPending) {
			got = append(got, places[i])
		}
		slices.Sort(got)
		equal(t, "places in the queue", got, []int{1, 2, 3, 4, 5})
		pms, err := s.PendingMessages(ctx, c.ID)
		ok(t, "pending messages", err)
		if len(pms) != max {
			t.Fatalf("%d pending messages, want %d", len(pms), max)
		}
	}
}

// testPendingMessageAndReady: a message queued while the start task becomes READY is either
// refused (ErrReady: it is sent instead) or among the pending messages that the delivery
// after READY reads. None is queued behind that delivery's back.
func testPendingMessageAndReady(t *testing.T, s store.Store) {
	ctx := t.Context()
	const maxMessages = 200
	for r := range 2 * rounds {
		c := newConversation(ownerA, fmt.Sprintf("conv-%02d", r), r)
		task := createConversation(t, s, c)
		var queued []string
		first := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			defer func() {
				if len(queued) == 0 {
					close(first)
				}
			}()
			for i := range maxMessages {
				pm := conversation.PendingMessage{ID: fmt.Sprintf("pm-%02d-%03d", r, i), ConversationID: c.ID,
					Message: conversation.Message{Text: "hi"}, CreatedAt: at(i)}
				_, err := s.AddPendingMessage(ctx, ownerA, pm, maxMessages)
				if errors.Is(err, conversation.ErrReady) {
					return
				}
				if err != nil {
					t.Errorf("queue: %v", err)
					return
				}
				queued = append(queued, pm.ID)
				if i == 0 {
					close(first)
				}
			}
		})
		<-first
		task.Status, task.UpdatedAt = conversation.TaskReady, at(r+1)
		ok(t, "task ready", s.UpdateStartTask(ctx, task))
		pms, err := s.PendingMessages(ctx, c.ID)
		ok(t, "pending messages after READY", err)
		wg.Wait()
		if t.Failed() {
			return
		}
		if got := ids(pms, func(m conversation.PendingMessage) string { return m.ID }); !slices.Equal(got, queued) {
			t.Fatalf("round %d: the delivery after READY reads %d messages, but %d were queued:\n got %v\nwant %v",
				r, len(got), len(queued), got, queued)
		}
	}
}

// testUserSkillLimitConcurrent: of skills created at once past the limit, exactly as many as
// the limit are kept.
func testUserSkillLimitConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	raceToLimit(t, "skill", 4, skill.ErrTooMany, func(owner string, i int) error {
		return s.CreateUserSkill(ctx, newUserSkill(owner, fmt.Sprintf("skill-%02d", i), i), 4)
	}, func(owner string) (int, error) {
		list, _, err := s.ListUserSkills(ctx, owner, paging.Query{})
		return len(list), err
	})
}

// testCustomSecretLimitConcurrent: of secrets created at once past the limit, exactly as many
// as the limit are kept.
func testCustomSecretLimitConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	raceToLimit(t, "secret", 4, customsecret.ErrTooMany, func(owner string, i int) error {
		return s.CreateCustomSecret(ctx, owner, newCustomSecret(fmt.Sprintf("SECRET_%02d", i), i), 4)
	}, func(owner string) (int, error) {
		list, err := s.CustomSecrets(ctx, owner)
		return len(list), err
	})
}

// testAPIKeyLimitConcurrent: of a user's API keys created at once past the limit, exactly as
// many as the limit are kept.
func testAPIKeyLimitConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	for r := range rounds {
		ok(t, "create user", s.CreateUser(ctx, newUser(fmt.Sprintf("user-%d", r), r)))
	}
	raceToLimit(t, "API key", 4, auth.ErrTooManyKeys, func(owner string, i int) error {
		return s.CreateAPIKey(ctx, newAPIKey(fmt.Sprintf("%s-key-%02d", owner, i), owner, i), 4)
	}, func(owner string) (int, error) {
		keys, err := s.ListAPIKeys(ctx, owner)
		return len(keys), err
	})
}

// testWebhookLimitConcurrent: of webhooks created at once past the limit, exactly as many as
// the limit are kept.
func testWebhookLimitConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	raceToLimit(t, "webhook", 3, webhook.ErrLimit, func(owner string, i int) error {
		return s.CreateWebhook(ctx, newWebhook(owner, fmt.Sprintf("wh-%s-%02d", owner, i), i), 3)
	}, func(owner string) (int, error) {
		ws, err := s.ListWebhooks(ctx, owner)
		return len(ws), err
	})
}

// raceToLimit creates ten items of a new owner at once through create, whose bound is limit,
// rounds times: exactly limit must be created, the others refused, and count must find
// limit kept.
func raceToLimit(t *testing.T, what string, limit int, refused error, create func(owner string, i int) error, count func(owner string) (int, error)) {
	t.Helper()
	for r := range rounds {
		owner := fmt.Sprintf("user-%d", r)
		errs := race(10, func(i int) error { return create(owner, i) })
		winners(t, "create "+what, errs, limit, refused)
		n, err := count(owner)
		ok(t, "count "+what+"s", err)
		if n != limit {
			t.Fatalf("%d %ss kept, want %d", n, what, limit)
		}
	}
}

// testWebhookClaimsConcurrent: dispatchers claiming at once never claim a delivery twice, and
// between them claim every delivery due.
func testWebhookClaimsConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	w := newWebhook(ownerA, "wh-1", 1)
	ok(t, "create webhook", s.CreateWebhook(ctx, w, 5))
	const deliveries, claimers = 30, 4
	var ds []webhook.Delivery
	for i := range deliveries {
		ds = append(ds, newDelivery(w, fmt.Sprintf("d-%02d", i), i))
	}
	ok(t, "create deliveries", s.CreateDeliveries(ctx, ds))
	claimed := make([][]string, claimers)
	errs := race(claimers, func(i int) error {
		// Until a claim finds nothing: every claim takes at least one, so this ends.
		for range deliveries + 1 {
			got, err := s.ClaimDeliveries(ctx, webhook.Claim{Now: at(deliveries), LeaseUntil: at(10 * deliveries), Limit: 3})
			if err != nil || len(got) == 0 {
				return err
			}
			for _, d := range got {
				claimed[i] = append(claimed[i], d.ID)
			}
		}
		return errors.New("claims never ran out")
	})
	winners(t, "claimer", errs, claimers, nil)
	seen := map[string]int{}
	for i, c := range claimed {
		for _, id := range c {
			if j, dup := seen[id]; dup {
				t.Fatalf("%s claimed by %d and by %d", id, j, i)
			}
			seen[id] = i
		}
	}
	if len(seen) != deliveries {
		t.Fatalf("%d deliveries claimed, want all %d", len(seen), deliveries)
	}
}

// testPRNumbersConcurrent: numbers added at once all stay.
func testPRNumbersConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := newConversation(ownerA, "conv-prs", 1)
	c.PRNumbers = nil
	createConversation(t, s, c)
	const n = 10
	errs := race(n, func(i int) error { return s.AddPRNumber(ctx, ownerA, c.ID, 100+i, at(2+i)) })
	winners(t, "add pr number", errs, n, nil)
	got, err := s.GetConversation(ctx, ownerA, c.ID)
	ok(t, "get conversation", err)
	prs := slices.Clone(got.PRNumbers)
	slices.Sort(prs)
	equal(t, "pr numbers", prs, []int{100, 101, 102, 103, 104, 105, 106, 107, 108, 109})
}

// testProviderTokensConcurrent: replacements of a user's tokens at once all succeed, and the
// set left is one of them, whole.
func testProviderTokensConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	const n = 6
	set := func(i int) []gitprovider.Token {
		return []gitprovider.Token{
			{Provider: gitprovider.GitHub, TokenSealed: fmt.Appendf(nil, "gh %d", i), UpdatedAt: at(i)},
			{Provider: gitprovider.GitLab, TokenSealed: fmt.Appendf(nil, "gl %d", i), UpdatedAt: at(i)},
		}
	}
	errs := race(n, func(i int) error { return s.ReplaceProviderTokens(ctx, ownerA, set(i)) })
	winners(t, "replace tokens", errs, n, nil)
	got, err := s.ProviderTokens(ctx, ownerA)
	ok(t, "provider tokens", err)
	if len(got) != 2 {
		t.Fatalf("%d tokens left, want 2", len(got))
	}
	var i int
	if _, err := fmt.Sscanf(string(got[0].TokenSealed), "gh %d", &i); err != nil {
		t.Fatalf("token %q: %v", got[0].TokenSealed, err)
	}
	equal(t, "tokens left", got, set(i))
}

// testResealWhileWriting: a value written while a reseal runs is either resealed (the write
// came first) or left as written (it came after); never is the value it replaced resealed over
// it, nor does a write fail for the reseal.
func testResealWhileWriting(t *testing.T, s store.Store) {
	ctx := t.Context()
	reseal := func(v []byte) ([]byte, error) { return append([]byte("resealed:"), v...), nil }
	for r := range 2 * rounds {
		old := newCustomSecret(fmt.Sprintf("SECRET_%02d", r), r)
		old.ValueSealed = []byte("old")
		ok(t, "create secret", s.CreateCustomSecret(ctx, ownerA, old, customsecret.MaxPerUser))
		changed := old
		changed.ValueSealed, changed.UpdatedAt = []byte("new"), at(100+r)
		errs := race(2, func(i int) error {
			if i == 0 {
				return s.Reseal(ctx, reseal)
			}
			return s.UpdateCustomSecret(ctx, ownerA, old.Name, changed)
		})
		winners(t, "reseal and write", errs, 2, nil)
		got, err := s.GetCustomSecret(ctx, ownerA, old.Name)
		ok(t, "get secret", err)
		if v := got.ValueSealed; !bytes.Equal(v, []byte("new")) && !bytes.Equal(v, []byte("resealed:new")) {
			t.Fatalf("round %d: value %q after a reseal and a write of %q, want it as written or resealed", r, v, "new")
		}
	}
}
