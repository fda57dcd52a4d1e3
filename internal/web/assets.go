package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
)

// The stylesheet, the script and the icon are embedded in the binary and served under names
// that carry a hash of their content, so browsers keep them for good and a new version is a
// new name. Each is compressed once, at start-up.

//go:embed assets
var assetFiles embed.FS

//go:embed templates
var templateFiles embed.FS

// assetTypes are the content types of the assets' extensions. mime.TypeByExtension would
// load the system's whole MIME database on first use, about 2 MB kept for the life of the
// process, for these three.
var assetTypes = map[string]string{
	".css": "text/css; charset=utf-8",
	".js":  "text/javascript; charset=utf-8",
	".svg": "image/svg+xml",
}

type asset struct {
	name        string // the served name: base.<hash>.ext
	contentType string
	plain, gz   []byte
}

type assets struct {
	byName map[string]*asset
	// CSS, JS and Icon are the served paths.
	CSS, JS, Icon string
}

func loadAssets() (*assets, error) {
	as := &assets{byName: map[string]*asset{}}
	entries, err := fs.ReadDir(assetFiles, "assets")
	if err != nil {
		return nil, fmt.Errorf("web assets: %w", err)
	}
	for _, e := range entries {
		b, err := fs.ReadFile(assetFiles, "assets/"+e.Name())
		if err != nil {
			return nil, fmt.Errorf("web asset %s: %w", e.Name(), err)
		}
		sum := sha256.Sum256(b)
		ext := path.Ext(e.Name())
		a := &asset{name: strings.TrimSuffix(e.Name(), ext) + "." + hex.EncodeToString(sum[:6]) + ext,
			contentType: assetTypes[ext], plain: b}
		if a.contentType == "" {
			return nil, fmt.Errorf("web asset %s: no content type for %q", e.Name(), ext)
		}
		var z bytes.Buffer
		gz, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
		gz.Write(b)
		gz.Close()
		if z.Len() < len(b) {
			a.gz = z.Bytes()
		}
		as.byName[a.name] = a
		switch e.Name() {
		case "app.css":
			as.CSS = "/assets/" + a.name
		case "app.js":
			as.JS = "/assets/" + a.name
		case "icon.svg":
			as.Icon = "/assets/" + a.name
		}
	}
	if as.CSS == "" || as.JS == "" || as.Icon == "" {
		return nil, fmt.Errorf("web assets: app.css, app.js and icon.svg must be embedded")
	}
	return as, nil
}

func (a *App) serveAsset(w http.ResponseWriter, r *http.Request) {
	as, ok := a.assets.byName[r.PathValue("name")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", as.contentType)
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	h.Add("Vary", "Accept-Encoding")
	body := as.plain
	if as.gz != nil && acceptsGzip(r) {
		h.Set("Content-Encoding", "gzip")
		body = as.gz
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}
