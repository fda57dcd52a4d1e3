package runtime

import (
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strings"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/wire"
)

// maxWalkEntries bounds the directory entries one request looks at, so that a huge tree
// under a skill directory cannot keep the runtime busy.
const maxWalkEntries = 20000

func (s *Server) handleSkillFiles(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		writeDetail(w, http.StatusBadRequest, "Could not read the request body")
		return
	}
	var req runtimeclient.SkillFilesRequest
	if err := wire.DecodeJSON(body, &req); err != nil {
		var invalid *wire.Error
		if errors.As(err, &invalid) {
			writeJSON(w, http.StatusUnprocessableEntity, map[string][]wire.Problem{"detail": invalid.Problems})
			return
		}
		s.log.Error("decode skill files request", "err", err)
		writeDetail(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	res, err := collectSkillFiles(s.cfg.Workspace, req)
	if err != nil {
		s.log.Error("collect skill files", "err", err)
		writeDetail(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// collectSkillFiles finds and reads the files req asks for. Every path is resolved through an
// os.Root of the workspace, so that no symbolic link leads out of it.
func collectSkillFiles(workspace string, req runtimeclient.SkillFilesRequest) (runtimeclient.SkillFilesResult, error) {
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return runtimeclient.SkillFilesResult{}, err
	}
	defer root.Close()
	c := &collector{root: root, fsys: root.FS(), req: req, res: runtimeclient.SkillFilesResult{Files: []runtimeclient.SkillFile{}}}
	seen := map[string]bool{}
	for _, dir := range req.Dirs {
		if dir == "" {
			dir = "."
		}
		if seen[dir] {
			continue
		}
		seen[dir] = true
		if fi, err := c.fsys.(fs.StatFS).Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		if !c.rootFiles(dir) || !c.skillDirs(dir) {
			break
		}
	}
	return c.res, nil
}

type collector struct {
	root    *os.Root
	fsys    fs.FS
	req     runtimeclient.SkillFilesRequest
	res     runtimeclient.SkillFilesResult
	total   int64
	visited int
}

// rootFiles lists the root files of dir in the request's order; false once a bound is hit.
func (c *collector) rootFiles(dir string) bool {
	entries, err := fs.ReadDir(c.fsys, dir)
	if err != nil {
		return true
	}
	for _, name := range c.req.RootFiles {
		for _, e := range entries {
			if strings.EqualFold(e.Name(), name) && !c.add(dir, "", e.Name(), path.Join(dir, e.Name())) {
				return false
			}
		}
	}
	return true
}

// skillDirs lists the Markdown files below each skill directory of dir, in lexical order;
// false once a bound is hit.
func (c *collector) skillDirs(dir string) bool {
	for _, sd := range c.req.SkillDirs {
		base := path.Join(dir, sd)
		if fi, err := fs.Stat(c.fsys, base); err != nil || !fi.IsDir() {
			continue
		}
		stop := errors.New("stop")
		err := fs.WalkDir(c.fsys, base, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // an unreadable directory is passed over
			}
			if c.visited++; c.visited > maxWalkEntries {
				c.res.Truncated = true
				return stop
			}
			if d.IsDir() || !strings.EqualFold(path.Ext(p), ".md") || c.excluded(d.Name()) {
				return nil
			}
			rel := strings.TrimPrefix(p, base+"/")
			if !c.add(dir, sd, rel, p) {
				return stop
			}
			return nil
		})
		if errors.Is(err, stop) {
			return false
		}
	}
	return true
}

func (c *collector) excluded(name string) bool {
	for _, x := range c.req.Exclude {
		if strings.EqualFold(name, x) {
			return true
		}
	}
	return false
}

// add reads one regular file (a symbolic link counts by its target) into the result; false
// when a bound stopped it.
func (c *collector) add(dir, skillDir, rel, full string) bool {
	fi, err := fs.Stat(c.fsys, full)
	if err == nil && !fi.Mode().IsRegular() {
		return true
	}
	if len(c.res.Files) >= c.req.MaxFiles {
		c.res.Truncated = true
		return false
	}
	if dir == "." {
		dir = ""
	}
	f := runtimeclient.SkillFile{Dir: dir, SkillDir: skillDir, Path: rel}
	switch {
	case err != nil:
		f.Problem = problemOf(err)
	case fi.Size() > c.req.MaxFileBytes:
		f.Size, f.TooLarge = fi.Size(), true
	case c.total+fi.Size() > c.req.MaxTotalBytes:
		c.res.Truncated = true
		return false
	default:
		data, err := c.read(full)
		switch {
		case err != nil:
			f.Problem = problemOf(err)
		case int64(len(data)) > c.req.MaxFileBytes:
			f.Size, f.TooLarge = int64(len(data)), true // it grew since Stat
		default:
			f.Size, f.Content = int64(len(data)), data
			c.total += f.Size
		}
	}
	c.res.Files = append(c.res.Files, f)
	return true
}

// read reads at most MaxFileBytes+1 bytes of the file, so that one growing meanwhile is
// still bounded.
func (c *collector) read(name string) ([]byte, error) {
	f, err := c.root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, c.req.MaxFileBytes+1))
}

// problemOf words a file error without the workspace's path.
func problemOf(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
