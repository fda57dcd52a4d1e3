package runtime

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/wire"
)

// uploadField is the multipart field that carries the file, as in OpenHands.
const uploadField = "file"

// multipartSlack is what a multipart body may hold besides the file: boundaries, part
// headers, other small fields.
const multipartSlack = 1 << 20

// maxUploadBytes is the bound of an upload: the runtime's, or the control plane's when it
// sends a lower one.
func (s *Server) maxUploadBytes(r *http.Request) int64 {
	limit := s.cfg.MaxUploadBytes
	if limit <= 0 {
		limit = runtimeclient.DefaultMaxUploadBytes
	}
	if n, err := strconv.ParseInt(r.Header.Get(runtimeclient.HeaderMaxUpload), 10, 64); err == nil && n > 0 {
		limit = min(limit, n)
	}
	return limit
}

// handleUpload writes the multipart field "file" to the path in the query, creating its
// parent directories. The file is streamed to a temporary file beside the target and renamed
// over it at the end, so that the target is never seen half written and a failed upload
// leaves nothing behind.
func (s *Server) handleUpload(w http.ResponseWriter, r *http.Request) {
	var q runtimeclient.FileQuery
	if !decodeQuery(w, r, &q) {
		return
	}
	limit := s.maxUploadBytes(r)
	r.Body = http.MaxBytesReader(w, r.Body, limit+multipartSlack)
	if err := s.upload(r, q.Path, limit); err != nil {
		var missing *wire.Error
		if errors.As(err, &missing) {
			writeJSON(w, http.StatusUnprocessableEntity, map[string][]wire.Problem{"detail": missing.Problems})
			return
		}
		s.writeFileError(w, "upload", err)
		return
	}
	writeJSON(w, http.StatusOK, runtimeclient.UploadResult{Success: true})
}

func (s *Server) upload(r *http.Request, name string, limit int64) error {
	p, err := s.resolve(name)
	if err != nil {
		return err
	}
	if p.rel == "." {
		return badPath("The path names the workspace itself, not a file in it")
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return badPath("The body must be multipart/form-data with the file in the field %q", uploadField)
	}
	part, err := filePart(mr, limit)
	if err != nil {
		return err
	}
	defer part.Close()

	root, err := s.openRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	if fi, err := root.Stat(p.rel); err == nil && fi.IsDir() {
		return badPath("Is a directory: %s", p.abs)
	}
	dir := filepath.Dir(p.rel)
	if err := root.MkdirAll(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			err = syscall.ENOTDIR // a file stands where a directory was to be made
		}
		return fsError(err, p, true)
	}
	f, tmp, err := createTemp(root, dir)
	if err != nil {
		return fsError(err, p, true)
	}
	n, err := io.Copy(f, io.LimitReader(part, limit+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > limit {
		err = &fileError{status: http.StatusRequestEntityTooLarge, detail: fmt.Sprintf("The file is larger than %d bytes", limit)}
	}
	if err == nil {
		err = root.Rename(tmp, p.rel)
	}
	if err != nil {
		root.Remove(tmp)
		return uploadError(err, p)
	}
	return nil
}

// filePart finds the file's part. A body that ends before it is a 422 in FastAPI's shape.
func filePart(mr *multipart.Reader, limit int64) (*multipart.Part, error) {
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			c := wire.NewChecker("body")
			c.Add("missing", "Field required", uploadField)
			return nil, c.Err()
		}
		if err != nil {
			return nil, uploadError(err, wsPath{})
		}
		if part.FormName() == uploadField {
			return part, nil
		}
		// Other fields are read and dropped, within the body's bound.
		io.Copy(io.Discard, io.LimitReader(part, limit))
		part.Close()
	}
}

// uploadError says why an upload failed: a body over the bound, one that could not be read,
// or the file system's refusal.
func uploadError(err error, p wsPath) error {
	var tooBig *http.MaxBytesError
	var fe *fileError
	switch {
	case errors.As(err, &fe):
		return err
	case errors.As(err, &tooBig):
		return &fileError{status: http.StatusRequestEntityTooLarge, detail: "Request body too large"}
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission), errors.Is(err, fs.ErrExist):
		return fsError(err, p, true)
	}
	var pe *os.PathError
	var le *os.LinkError
	if errors.As(err, &pe) || errors.As(err, &le) {
		return fsError(err, p, true)
	}
	return badPath("Could not read the upload: %v", err)
}

// createTemp makes a file of a name nobody uses in dir, for an upload to be written to.
func createTemp(root *os.Root, dir string) (*os.File, string, error) {
	for i := 0; ; i++ {
		b := make([]byte, 8)
		rand.Read(b)
		name := filepath.Join(dir, ".agentd-upload-"+hex.EncodeToString(b))
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) && i < 10 {
			continue
		}
		return f, name, err
	}
}
