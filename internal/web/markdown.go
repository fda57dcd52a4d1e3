package web

import (
	"bytes"
	"html/template"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Messages are Markdown (GitHub's flavour). goldmark renders them without raw HTML (left out
// with a comment) and without links or images whose URL could run script (javascript:,
// data: other than images), escaping all text; links get rel="nofollow noopener noreferrer".
// What it writes is therefore safe to put in a page as it is.

var md = goldmark.New(
	goldmark.WithExtensions(extension.GFM),
	goldmark.WithParserOptions(parser.WithASTTransformers(
		util.Prioritized(linkRel{}, 100),
	)),
)

// maxMarkdownBytes bounds the text rendered as Markdown; a longer message is shown as plain
// text, which costs nothing to lay out.
const maxMarkdownBytes = 256 << 10

// markdown renders a message's text.
func markdown(s string) template.HTML {
	if len(s) > maxMarkdownBytes {
		return template.HTML("<pre class=\"plain\">" + template.HTMLEscapeString(s) + "</pre>")
	}
	var b bytes.Buffer
	if err := md.Convert([]byte(s), &b); err != nil {
		return template.HTML("<pre class=\"plain\">" + template.HTMLEscapeString(s) + "</pre>")
	}
	return template.HTML(b.String()) // goldmark escapes text and drops raw HTML (see above)
}

// linkRel marks every link of a message as leading to a page that gets neither this page's
// window nor its address.
type linkRel struct{}

func (linkRel) Transform(doc *ast.Document, _ text.Reader, _ parser.Context) {
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n.(type) {
		case *ast.Link, *ast.AutoLink:
			n.SetAttributeString("rel", []byte("nofollow noopener noreferrer"))
		}
		return ast.WalkContinue, nil
	})
}
