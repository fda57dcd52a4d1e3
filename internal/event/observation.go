package event

import "encoding/json"

// ImageURLs returns the URLs of the images among the observation's content parts
// ({"type":"image","image_urls":[...]}, as OpenHands' ImageContent), in order: what an MCP
// tool answered with, for a model that takes images.
func (o *ObservationEvent) ImageURLs() []string {
	var obs struct {
		Content []struct {
			Type      string   `json:"type"`
			ImageURLs []string `json:"image_urls"`
		} `json:"content"`
	}
	if json.Unmarshal(o.Observation, &obs) != nil {
		return nil
	}
	var out []string
	for _, c := range obs.Content {
		if c.Type == "image" {
			out = append(out, c.ImageURLs...)
		}
	}
	return out
}
