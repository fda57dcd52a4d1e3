package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/skill"
	"github.com/agentd/agentd/internal/store"
)

const userSkillColumns = `user_id, name, triggers, description, content, created_at, updated_at`

func scanUserSkill(row pgx.Row) (skill.UserSkill, error) {
	var u skill.UserSkill
	var triggers string
	if err := row.Scan(&u.UserID, &u.Name, &triggers, &u.Description, &u.Content, &u.CreatedAt, &u.UpdatedAt); err != nil {
		return skill.UserSkill{}, err
	}
	if err := decodeTriggers(triggers, &u.Triggers); err != nil {
		return skill.UserSkill{}, fmt.Errorf("triggers of skill %q: %w", u.Name, err)
	}
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

// CreateUserSkill counts and inserts under the user's skills lock (see countForUser), so that
// concurrent creations cannot both pass the limit.
func (s *Store) CreateUserSkill(ctx context.Context, u skill.UserSkill, limit int) error {
	triggers, err := triggersArg(u.Triggers)
	if err == nil {
		err = checkTimes(u.CreatedAt, u.UpdatedAt)
	}
	if err == nil {
		err = s.write(ctx, func(tx pgx.Tx) error {
			n, err := countForUser(ctx, tx, lockSkills, "user_id", u.UserID)
			if err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `INSERT INTO user_skills (`+userSkillColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
				u.UserID, u.Name, triggers, u.Description, u.Content, u.CreatedAt, u.UpdatedAt)
			return store.LimitedInsert(err, isUnique(err), n, limit, skill.ErrExists, skill.ErrTooMany)
		})
	}
	if err != nil {
		return fmt.Errorf("create skill %q: %w", u.Name, err)
	}
	return nil
}

func (s *Store) GetUserSkill(ctx context.Context, userID, name string) (skill.UserSkill, error) {
	u, err := scanUserSkill(s.pool.QueryRow(ctx,
		`SELECT `+userSkillColumns+` FROM user_skills WHERE user_id = $1 AND name = $2`, userID, name))
	if errors.Is(err, pgx.ErrNoRows) {
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
	var w where
	w.add("user_id = " + w.arg(userID))
	keyset(&w, "created_at", "name", false, c)
	us, err := collect(ctx, s.pool, scanUserSkill,
		`SELECT `+userSkillColumns+` FROM user_skills`+w.String()+order("created_at", "name", false)+limit(q.Limit+1),
		w.args...)
	if err != nil {
		return nil, "", fmt.Errorf("list skills: %w", err)
	}
	us, next := page(us, q.Limit, func(u skill.UserSkill) (int64, string) { return timeKey(u.CreatedAt), u.Name })
	return us, next, nil
}

func (s *Store) UpdateUserSkill(ctx context.Context, u skill.UserSkill) error {
	triggers, err := triggersArg(u.Triggers)
	if err == nil {
		err = checkTimes(u.UpdatedAt)
	}
	if err == nil {
		err = s.execOne(ctx, skill.ErrNotFound,
			`UPDATE user_skills SET triggers = $1, description = $2, content = $3, updated_at = $4 WHERE user_id = $5 AND name = $6`,
			triggers, u.Description, u.Content, u.UpdatedAt, u.UserID, u.Name)
	}
	if err != nil {
		return fmt.Errorf("update skill %q: %w", u.Name, err)
	}
	return nil
}

func (s *Store) DeleteUserSkill(ctx context.Context, userID, name string) error {
	if err := s.execOne(ctx, skill.ErrNotFound, `DELETE FROM user_skills WHERE user_id = $1 AND name = $2`, userID, name); err != nil {
		return fmt.Errorf("delete skill %q: %w", name, err)
	}
	return nil
}

// PutConversationSkills replaces the skills under the conversation's row lock, so that two
// replacements follow one another rather than clash on the positions. A conversation that
// does not exist may be given no skills, as with SQLite, but not some.
func (s *Store) PutConversationSkills(ctx context.Context, conversationID string, skills []skill.Skill) error {
	err := s.write(ctx, func(tx pgx.Tx) error {
		if err := lockConversation(ctx, tx, conversationID); err != nil {
			if errors.Is(err, conversation.ErrNotFound) && len(skills) == 0 {
				return nil
			}
			return err
		}
		var b pgx.Batch
		b.Queue(`DELETE FROM conversation_skills WHERE conversation_id = $1`, conversationID)
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
			b.Queue(`INSERT INTO conversation_skills (conversation_id, position, name, type, triggers, description, content, source, mcp_servers)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
				conversationID, i, sk.Name, string(sk.Type), triggers, sk.Description, sk.Content, sk.Source, string(servers))
		}
		err := tx.SendBatch(ctx, &b).Close()
		if isForeignKey(err) {
			return conversation.ErrNotFound
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("put skills of conversation %s: %w", conversationID, err)
	}
	return nil
}

func (s *Store) ConversationSkills(ctx context.Context, conversationID string) ([]skill.Skill, error) {
	out, err := collect(ctx, s.pool, func(row pgx.Row) (skill.Skill, error) {
		var sk skill.Skill
		var typ, triggers, servers string
		if err := row.Scan(&sk.Name, &typ, &triggers, &sk.Description, &sk.Content, &sk.Source, &servers); err != nil {
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
		WHERE conversation_id = $1 ORDER BY position`, conversationID)
	if err != nil {
		return nil, fmt.Errorf("skills of conversation %s: %w", conversationID, err)
	}
	return out, nil
}
