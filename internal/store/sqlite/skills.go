package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/skill"
	"github.com/agentd/agentd/internal/store"
)

const userSkillColumns = `user_id, name, triggers, description, content, created_at, updated_at`

func scanUserSkill(sc scanner) (skill.UserSkill, error) {
	var u skill.UserSkill
	var triggers string
	var created, updated int64
	if err := sc.Scan(&u.UserID, &u.Name, &triggers, &u.Description, &u.Content, &created, &updated); err != nil {
		return skill.UserSkill{}, err
	}
	if err := decodeTriggers(triggers, &u.Triggers); err != nil {
		return skill.UserSkill{}, fmt.Errorf("triggers of skill %q: %w", u.Name, err)
	}
	u.CreatedAt, u.UpdatedAt = fromNanos(created), fromNanos(updated)
	return u, nil
}

// triggersArg stores triggers as a JSON array, never null.
func triggersArg(ts []string) (string, error) {
	if ts == nil {
		ts = []string{}
	}
	return jsonArg(ts)
}

// decodeTriggers reads what triggersArg stored; no triggers read back as nil.
func decodeTriggers(s string, ts *[]string) error {
	if err := json.Unmarshal([]byte(s), ts); err != nil {
		return err
	}
	if len(*ts) == 0 {
		*ts = nil
	}
	return nil
}

func (s *Store) CreateUserSkill(ctx context.Context, u skill.UserSkill, limit int) error {
	triggers, err := triggersArg(u.Triggers)
	if err != nil {
		return fmt.Errorf("create skill %q: %w", u.Name, err)
	}
	if err := checkTimes(u.CreatedAt, u.UpdatedAt); err != nil {
		return fmt.Errorf("create skill %q: %w", u.Name, err)
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		n, err := countForUser(ctx, tx, "user_skills", "user_id", u.UserID)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO user_skills (`+userSkillColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			u.UserID, u.Name, triggers, u.Description, u.Content, nanos(u.CreatedAt), nanos(u.UpdatedAt))
		return store.LimitedInsert(err, isUnique(err), n, limit, skill.ErrExists, skill.ErrTooMany)
	})
	if err != nil {
		return fmt.Errorf("create skill %q: %w", u.Name, err)
	}
	return nil
}

func (s *Store) GetUserSkill(ctx context.Context, userID, name string) (skill.UserSkill, error) {
	u, err := scanUserSkill(s.r.QueryRowContext(ctx,
		`SELECT `+userSkillColumns+` FROM user_skills WHERE user_id = ? AND name = ?`, userID, name))
	if errors.Is(err, sql.ErrNoRows) {
		err = skill.ErrNotFound
	}
	if err != nil {
		return skill.UserSkill{}, fmt.Errorf("get skill %q: %w", name, err)
	}
	return u, nil
}

func (s *Store) ListUserSkills(ctx context.Context, userID string, q paging.Query) ([]skill.UserSkill, string, error) {
	q = q.Normalize()
	c, err := decodeCursor(q.Cursor)
	if err != nil {
		return nil, "", fmt.Errorf("list skills: %w", err)
	}
	w := where{}
	w.add("user_id = ?", userID)
	keyset(&w, "created_at", "name", false, c)
	us, err := collect(ctx, s.r, scanUserSkill,
		`SELECT `+userSkillColumns+` FROM user_skills`+w.String()+order("created_at", "name", false)+` LIMIT ?`,
		append(w.args, q.Limit+1)...)
	if err != nil {
		return nil, "", fmt.Errorf("list skills: %w", err)
	}
	us, next := page(us, q.Limit, func(u skill.UserSkill) (int64, string) { return nanos(u.CreatedAt), u.Name })
	return us, next, nil
}

func (s *Store) UpdateUserSkill(ctx context.Context, u skill.UserSkill) error {
	triggers, err := triggersArg(u.Triggers)
	if err == nil {
		err = checkTimes(u.UpdatedAt)
	}
	if err != nil {
		return fmt.Errorf("update skill %q: %w", u.Name, err)
	}
	res, err := s.one.ExecContext(ctx,
		`UPDATE user_skills SET triggers = ?, description = ?, content = ?, updated_at = ? WHERE user_id = ? AND name = ?`,
		triggers, u.Description, u.Content, nanos(u.UpdatedAt), u.UserID, u.Name)
	if err == nil {
		err = mustAffect(res, skill.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("update skill %q: %w", u.Name, err)
	}
	return nil
}

func (s *Store) DeleteUserSkill(ctx context.Context, userID, name string) error {
	res, err := s.one.ExecContext(ctx, `DELETE FROM user_skills WHERE user_id = ? AND name = ?`, userID, name)
	if err == nil {
		err = mustAffect(res, skill.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("delete skill %q: %w", name, err)
	}
	return nil
}

func (s *Store) PutConversationSkills(ctx context.Context, conversationID string, skills []skill.Skill) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM conversation_skills WHERE conversation_id = ?`, conversationID); err != nil {
			return err
		}
		for i, sk := range skills {
			triggers, err := triggersArg(sk.Triggers)
			if err != nil {
				return err
			}
			servers := []byte("[]")
			if len(sk.MCPServers) > 0 {
				if servers, err = json.Marshal(sk.MCPServers); err != nil {
					return err
				}
			}
			_, err = tx.ExecContext(ctx,
				`INSERT INTO conversation_skills (conversation_id, position, name, type, triggers, description, content, source, mcp_servers)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				conversationID, i, sk.Name, string(sk.Type), triggers, sk.Description, sk.Content, sk.Source, string(servers))
			if isForeignKey(err) {
				return conversation.ErrNotFound
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("put skills of conversation %s: %w", conversationID, err)
	}
	return nil
}

func (s *Store) ConversationSkills(ctx context.Context, conversationID string) ([]skill.Skill, error) {
	out, err := collect(ctx, s.r, func(sc scanner) (skill.Skill, error) {
		var sk skill.Skill
		var typ, triggers, servers string
		if err := sc.Scan(&sk.Name, &typ, &triggers, &sk.Description, &sk.Content, &sk.Source, &servers); err != nil {
			return skill.Skill{}, err
		}
		sk.Type = skill.Type(typ)
		if err := decodeTriggers(triggers, &sk.Triggers); err != nil {
			return skill.Skill{}, fmt.Errorf("triggers of skill %q: %w", sk.Name, err)
		}
		if err := json.Unmarshal([]byte(servers), &sk.MCPServers); err != nil {
			return skill.Skill{}, fmt.Errorf("mcp servers of skill %q: %w", sk.Name, err)
		}
		if len(sk.MCPServers) == 0 {
			sk.MCPServers = nil
		}
		return sk, nil
	}, `SELECT name, type, triggers, description, content, source, mcp_servers FROM conversation_skills
		WHERE conversation_id = ? ORDER BY position`, conversationID)
	if err != nil {
		return nil, fmt.Errorf("skills of conversation %s: %w", conversationID, err)
	}
	return out, nil
}
