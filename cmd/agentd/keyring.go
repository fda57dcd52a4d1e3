//go:build !agentd_runtime_only

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/agentd/agentd/internal/app"
	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/secret"
)

// Rotating the key with replicas running, in four steps, each refused until every live
// replica (as its heartbeat in the store says) is ready for it: so that every replica can open
// under the new key before any seals with it, and none seals under a key that is dropped.
//
//	agentd keyring add-key   a new key in the file, not active yet
//	agentd keyring activate  the new key seals, once every live replica holds it
//	agentd keyring reseal    every stored secret resealed under it, once every live replica seals with it
//	agentd keyring prune     the old keys out of the file, once no stored value names them

// keyringCommand runs `agentd keyring <step>` with serve's configuration flags in args (the
// keyring file and the database come from them, as serve reads them).
func keyringCommand(ctx context.Context, step string, args []string, stdout io.Writer) error {
	var keyID string
	if step == "activate" {
		if len(args) > 1 && args[0] == "--" { // an id of an older keyring may begin with a dash
			args = append(args[1:2:2], args[2:]...)
		} else if len(args) == 0 || strings.HasPrefix(args[0], "-") {
			return errors.New("keyring activate: name the key to activate (agentd keyring add-key printed its id)")
		}
		keyID, args = args[0], args[1:]
	}
	cfg, err := config.Load(args, os.Getenv)
	if err != nil {
		return err
	}
	if cfg.KeyringFile == "" {
		return errors.New("keyring " + step + ": --keyring-file (AGENTD_KEYRING_FILE) names the keyring file the replicas read")
	}
	if step == "add-key" {
		k, err := secret.Load(cfg.KeyringFile)
		if err != nil {
			return err
		}
		id, err := k.AddKey()
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "key %s added, not active; once every replica reads the file (within 10 s of its change), run: agentd keyring activate %s\n", id, id)
		return nil
	}
	if !cfg.Postgres() {
		unlock, err := app.LockDataDir(cfg.DataDir)
		if err != nil {
			return fmt.Errorf("%w (stop agentd serve, or use agentd rotate-key)", err)
		}
		defer unlock()
	}
	data, err := openStores(ctx, cfg, "", nil, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer data.Close()
	live, err := data.store.LiveReplicas(ctx)
	if err != nil {
		return err
	}
	k := data.keyring
	switch step {
	case "activate":
		if !slices.Contains(k.KeyIDs(), keyID) {
			return fmt.Errorf("keyring activate: the file holds no key %s", keyID)
		}
		if lacking := replicasWithout(live, func(r conversation.Replica) bool { return slices.Contains(r.Keys, keyID) }); lacking != "" {
			return fmt.Errorf("keyring activate: replicas %s do not hold key %s yet: give them the file (they read it every 10 s) and run this again", lacking, keyID)
		}
		if err := k.Activate(keyID); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "key %s is active; once every replica seals with it, run: agentd keyring reseal\n", keyID)
	case "reseal":
		active := k.ActiveKeyID()
		if lacking := replicasWithout(live, func(r conversation.Replica) bool { return r.ActiveKey == active }); lacking != "" {
			return fmt.Errorf("keyring reseal: replicas %s do not seal with key %s yet: wait until they read the file, and run this again", lacking, active)
		}
		n := 0
		err := data.store.Reseal(ctx, func(sealed []byte) ([]byte, error) {
			if secret.KeyIDOf(sealed) == active {
				return sealed, nil
			}
			plain, err := k.Open(sealed)
			if err != nil {
				return nil, err
			}
			n++
			return k.Seal(plain)
		})
		if err != nil {
			return fmt.Errorf("keyring reseal: %w", err)
		}
		fmt.Fprintf(stdout, "%d stored values resealed under key %s; now run: agentd keyring prune\n", n, active)
	case "prune":
		active := k.ActiveKeyID()
		if lacking := replicasWithout(live, func(r conversation.Replica) bool { return r.ActiveKey == active }); lacking != "" {
			return fmt.Errorf("keyring prune: replicas %s do not seal with key %s yet", lacking, active)
		}
		old := 0
		err := data.store.Reseal(ctx, func(sealed []byte) ([]byte, error) {
			if secret.KeyIDOf(sealed) != active {
				old++
			}
			return sealed, nil
		})
		if err != nil {
			return fmt.Errorf("keyring prune: %w", err)
		}
		if old > 0 {
			return fmt.Errorf("keyring prune: %d stored values are sealed under other keys than %s: run agentd keyring reseal first", old, active)
		}
		dropped, err := k.Prune()
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "keys %s dropped from the file; give it to every replica\n", strings.Join(dropped, ", "))
	default:
		return fmt.Errorf("keyring: no step %q", step)
	}
	return nil
}

// replicasWithout names the live replicas for which ok fails, "" when there is none.
func replicasWithout(live []conversation.Replica, ok func(conversation.Replica) bool) string {
	var ids []string
	for _, r := range live {
		if !ok(r) {
			ids = append(ids, r.ID)
		}
	}
	return strings.Join(ids, ", ")
}
