package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/webhook"
)

func webhookInfo(w webhook.Webhook) apitypes.Webhook {
	kinds := make([]apitypes.WebhookEventKind, len(w.Kinds))
	for i, k := range w.Kinds {
		kinds[i] = apitypes.WebhookEventKind(k)
	}
	return apitypes.Webhook{ID: w.ID, URL: w.URL, Events: kinds, ConversationID: optString(w.ConversationID),
		Description: w.Description, CreatedAt: w.CreatedAt}
}

func deliveryInfo(d webhook.Delivery) apitypes.WebhookDelivery {
	out := apitypes.WebhookDelivery{ID: d.ID, WebhookID: d.WebhookID, Event: apitypes.WebhookEventKind(d.Kind),
		Status: apitypes.WebhookDeliveryStatus(d.Status), Attempts: d.Attempts, Error: optString(d.Error),
		CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt, Payload: apitypes.Event(json.RawMessage(d.Payload))}
	if d.ResponseCode != 0 {
		out.ResponseCode = &d.ResponseCode
	}
	if d.Status == webhook.StatusPending && !d.NextAttemptAt.IsZero() {
		out.NextAttemptAt = &d.NextAttemptAt
	}
	return out
}

func (a *API) createWebhook(w http.ResponseWriter, r *http.Request) error {
	var req apitypes.WebhookCreateRequest
	if _, err := decodeBody(r, &req); err != nil {
		return err
	}
	cr := webhook.CreateRequest{URL: req.URL}
	for _, k := range req.Events {
		cr.Kinds = append(cr.Kinds, string(k))
	}
	if req.ConversationID != nil {
		id, err := normalizeUUID(*req.ConversationID)
		if err != nil {
			return problem("value_error", "Value error, conversation not found", "body", "conversation_id")
		}
		cr.ConversationID = id
	}
	if req.Description != nil {
		cr.Description = *req.Description
	}
	wh, secret, err := a.d.Webhooks.Create(r.Context(), caller(r).ID, cr)
	if err != nil {
		return err
	}
	info := webhookInfo(wh)
	writeJSON(w, http.StatusCreated, apitypes.WebhookCreated{ID: info.ID, URL: info.URL, Events: info.Events,
		ConversationID: info.ConversationID, Description: info.Description, CreatedAt: info.CreatedAt, Secret: secret})
	return nil
}

func (a *API) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	ws, err := a.d.Webhooks.List(r.Context(), caller(r).ID)
	if err != nil {
		return err
	}
	out := make([]apitypes.Webhook, len(ws))
	for i, wh := range ws {
		out[i] = webhookInfo(wh)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) getWebhook(w http.ResponseWriter, r *http.Request) error {
	wh, err := a.d.Webhooks.Get(r.Context(), caller(r).ID, r.PathValue("webhook_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, webhookInfo(wh))
	return nil
}

func (a *API) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	if err := a.d.Webhooks.Delete(r.Context(), caller(r).ID, r.PathValue("webhook_id")); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.Success{Success: true})
	return nil
}

func (a *API) listDeliveries(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.WebhookDeliveryQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	var status webhook.Status
	if q.Status != nil {
		status = webhook.Status(*q.Status)
	}
	ds, next, err := a.d.Webhooks.Deliveries(r.Context(), caller(r).ID, r.PathValue("webhook_id"), status,
		paging.Query{Cursor: q.PageID, Limit: q.Limit})
	if err != nil {
		return err
	}
	page := apitypes.WebhookDeliveryPage{Items: make([]apitypes.WebhookDelivery, len(ds)), NextPageID: optString(next)}
	for i, d := range ds {
		page.Items[i] = deliveryInfo(d)
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

func (a *API) redeliver(w http.ResponseWriter, r *http.Request) error {
	d, err := a.d.Webhooks.Redeliver(r.Context(), caller(r).ID, r.PathValue("webhook_id"), r.PathValue("delivery_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, deliveryInfo(d))
	return nil
}
