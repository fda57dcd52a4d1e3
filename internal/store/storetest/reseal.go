package storetest

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/customsecret"
	"github.com/agentd/agentd/internal/gitprovider"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/settings"
	"github.com/agentd/agentd/internal/store"
	"github.com/agentd/agentd/internal/webhook"
)

// sealedWorld is one of every kind of sealed value, as stored.
type sealedWorld struct {
	SettingsA, SettingsB settings.Record
	Tokens               []gitprovider.Token
	Secrets              []customsecret.Secret
	Sandbox              sandbox.Sandbox
	Conv, Bare           conversation.Conversation
	Webhook              webhook.Webhook
	KeyringCheck         []byte
}

// sealed lists every non-empty sealed value in w.
func (w sealedWorld) sealed() [][]byte {
	var out [][]byte
	for _, r := range []settings.Record{w.SettingsA, w.SettingsB} {
		for _, v := range r.Secrets {
			out = append(out, v)
		}
	}
	for _, tk := range w.Tokens {
		out = append(out, tk.TokenSealed)
	}
	for _, sec := range w.Secrets {
		out = append(out, sec.ValueSealed)
	}
	return append(out, w.Sandbox.SessionKeySealed, w.Conv.RequestSealed, w.Conv.SecretsSealed, w.Webhook.SecretSealed, w.KeyringCheck)
}

func storeSealedWorld(t *testing.T, s store.Store) sealedWorld {
	ctx := t.Context()
	w := sealedWorld{
		SettingsA: newSettings(ownerA, 1),
		SettingsB: newSettings(ownerB, 2),
		Tokens: []gitprovider.Token{
			{Provider: gitprovider.GitHub, TokenSealed: []byte("sealed gh"), UpdatedAt: at(1)},
			{Provider: gitprovider.GitLab, TokenSealed: []byte("sealed gl"), UpdatedAt: at(1)},
		},
		Secrets: []customsecret.Secret{newCustomSecret("API_TOKEN", 1), newCustomSecret("DEPLOY_KEY", 1)},
		Sandbox: newSandbox(ownerA, "sb-1", 1, sandbox.StatusRunning),
		Conv:    newConversation(ownerA, "conv-1", 1),
		Bare:    newConversation(ownerB, "conv-bare", 2),
		Webhook: newWebhook(ownerA, "wh-1", 1),
	}
	w.SettingsA.Secrets["search_api_key"] = []byte("sealed search key")
	w.Bare.RequestSealed, w.Bare.SecretsSealed = nil, nil
	ok(t, "put settings", s.PutSettings(ctx, w.SettingsA))
	ok(t, "put settings", s.PutSettings(ctx, w.SettingsB))
	ok(t, "replace tokens", s.ReplaceProviderTokens(ctx, ownerA, w.Tokens))
	for _, sec := range w.Secrets {
		ok(t, "create secret", s.CreateCustomSecret(ctx, ownerA, sec, customsecret.MaxPerUser))
	}
	ok(t, "create sandbox", s.CreateSandbox(ctx, w.Sandbox, 0))
	createConversation(t, s, w.Conv)
	createConversation(t, s, w.Bare)
	ok(t, "create webhook", s.CreateWebhook(ctx, w.Webhook, webhook.MaxPerUser))
	check, err := s.KeyringCheck(ctx, func() ([]byte, error) { return []byte("sealed check"), nil })
	ok(t, "keyring check", err)
	w.KeyringCheck = check
	return w
}

// readSealedWorld reads back what storeSealedWorld stored.
func readSealedWorld(t *testing.T, s store.Store, like sealedWorld) sealedWorld {
	ctx := t.Context()
	var w sealedWorld
	var err error
	w.SettingsA, err = s.GetSettings(ctx, ownerA)
	ok(t, "get settings", err)
	w.SettingsB, err = s.GetSettings(ctx, ownerB)
	ok(t, "get settings", err)
	w.Tokens, err = s.ProviderTokens(ctx, ownerA)
	ok(t, "get tokens", err)
	w.Secrets, err = s.CustomSecrets(ctx, ownerA)
	ok(t, "get secrets", err)
	w.Sandbox, err = s.GetSandbox(ctx, ownerA, like.Sandbox.ID)
	ok(t, "get sandbox", err)
	v, err := s.GetConversation(ctx, ownerA, like.Conv.ID)
	ok(t, "get conversation", err)
	w.Conv = v.Conversation
	v, err = s.GetConversation(ctx, ownerB, like.Bare.ID)
	ok(t, "get conversation", err)
	w.Bare = v.Conversation
	w.Webhook, err = s.GetWebhook(ctx, ownerA, like.Webhook.ID)
	ok(t, "get webhook", err)
	w.KeyringCheck, err = s.KeyringCheck(ctx, func() ([]byte, error) {
		t.Error("the keyring check was stored already, yet KeyringCheck sealed another")
		return []byte("another"), nil
	})
	ok(t, "keyring check", err)
	return w
}

func testReseal(t *testing.T, s store.Store) {
	before := storeSealedWorld(t, s)
	reseal := func(v []byte) []byte { return append([]byte("v2:"), v...) }
	var seen [][]byte
	err := s.Reseal(t.Context(), func(v []byte) ([]byte, error) {
		if len(v) > 0 {
			seen = append(seen, slices.Clone(v))
		}
		return reseal(v), nil
	})
	ok(t, "reseal", err)

	want := before.sealed()
	slices.SortFunc(want, bytes.Compare)
	slices.SortFunc(seen, bytes.Compare)
	equal(t, "values passed to fn", seen, want)

	expect := before
	expect.SettingsA.Secrets = map[string][]byte{}
	for k, v := range before.SettingsA.Secrets {
		expect.SettingsA.Secrets[k] = reseal(v)
	}
	expect.SettingsB.Secrets = map[string][]byte{"llm_api_key": reseal(before.SettingsB.Secrets["llm_api_key"])}
	expect.Tokens = slices.Clone(before.Tokens)
	for i := range expect.Tokens {
		expect.Tokens[i].TokenSealed = reseal(before.Tokens[i].TokenSealed)
	}
	expect.Sandbox.SessionKeySealed = reseal(before.Sandbox.SessionKeySealed)
	expect.Secrets = slices.Clone(before.Secrets)
	for i := range expect.Secrets {
		expect.Secrets[i].ValueSealed = reseal(before.Secrets[i].ValueSealed)
	}
	expect.Conv.RequestSealed = reseal(before.Conv.RequestSealed)
	expect.Conv.SecretsSealed = reseal(before.Conv.SecretsSealed)
	expect.Webhook.SecretSealed = reseal(before.Webhook.SecretSealed)
	expect.KeyringCheck = reseal(before.KeyringCheck)
	after := readSealedWorld(t, s, before)
	equal(t, "settings A", after.SettingsA, expect.SettingsA)
	equal(t, "settings B", after.SettingsB, expect.SettingsB)
	equal(t, "tokens", after.Tokens, expect.Tokens)
	equal(t, "custom secrets", after.Secrets, expect.Secrets)
	equal(t, "sandbox", after.Sandbox, expect.Sandbox)
	equal(t, "conversation", after.Conv, expect.Conv)
	equal(t, "conversation without a request", after.Bare, expect.Bare)
	equal(t, "webhook", after.Webhook, expect.Webhook)
	equal(t, "keyring check", after.KeyringCheck, expect.KeyringCheck)
}

// testKeyringCheck: the first call seals and stores the check value, every later one reads
// it back without sealing; servers starting together on an empty store keep one value, which
// each of them gets; a failed seal stores nothing.
func testKeyringCheck(t *testing.T, s store.Store) {
	ctx := t.Context()
	boom := errors.New("boom")
	_, err := s.KeyringCheck(ctx, func() ([]byte, error) { return nil, boom })
	is(t, "keyring check with a failing seal", err, boom)
	const n = 4
	got := make([][]byte, n)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			v, err := s.KeyringCheck(ctx, func() ([]byte, error) { return []byte{'0' + byte(i)}, nil })
			got[i] = v
			errs <- err
		}()
	}
	for range n {
		ok(t, "keyring check", <-errs)
	}
	for i := range got {
		equal(t, "check value of each first start", got[i], got[0])
	}
	again, err := s.KeyringCheck(ctx, func() ([]byte, error) { return []byte("later"), nil })
	ok(t, "keyring check", err)
	equal(t, "check value read back", again, got[0])
}

func testResealRollback(t *testing.T, s store.Store) {
	before := storeSealedWorld(t, s)
	total := len(before.sealed())
	boom := errors.New("boom")
	// Fail at the first, a middle and the last value: nothing may change either way.
	for _, failAt := range []int{1, total / 2, total} {
		calls := 0
		err := s.Reseal(t.Context(), func(v []byte) ([]byte, error) {
			if len(v) > 0 {
				calls++
			}
			if calls == failAt {
				return nil, boom
			}
			return append([]byte("v2:"), v...), nil
		})
		is(t, "reseal with a failing fn", err, boom)
		after := readSealedWorld(t, s, before)
		equal(t, "sealed values after a failed reseal", after, before)
	}
}
