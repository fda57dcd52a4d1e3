-- 0010: the MCP servers a conversation's skills declare (their frontmatter's mcp_tools), as a
-- JSON array of skill.MCPServer; '[]' for a skill that declares none.
ALTER TABLE conversation_skills ADD COLUMN mcp_servers TEXT NOT NULL DEFAULT '[]';
