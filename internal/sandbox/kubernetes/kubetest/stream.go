package kubetest

import (
	"net/http"
	"time"

	//lint:ignore SA1019 client-go's spdy.Upgrader, which remotecommand takes, still returns
	// apimachinery's httpstream.Connection, which only this wrapper of k8s.io/streaming gives;
	// client-go's own spdy.RoundTripperFor uses it too.
	httpstreamspdy "k8s.io/apimachinery/pkg/util/httpstream/spdy"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport/spdy"
)

// StreamTransport returns the round tripper and upgrader that
// remotecommand.NewSPDYExecutorForTransports and spdy.NewDialer take to exec in, attach to
// or forward a port of a pod from this process. The ones spdy.RoundTripperFor
// makes from Config would dial the API server themselves, from this process's network
// namespace, where it is not; these dial through DialContext.
func (c *Cluster) StreamTransport() (http.RoundTripper, spdy.Upgrader, error) {
	tlsConfig, err := rest.TLSConfigFor(c.Config)
	if err != nil {
		return nil, nil, err
	}
	// An upgrade is an HTTP/1.1 request.
	tlsConfig = tlsConfig.Clone()
	tlsConfig.NextProtos = []string{"http/1.1"}
	upgrader, err := httpstreamspdy.NewRoundTripperWithConfig(httpstreamspdy.RoundTripperConfig{
		PingPeriod: 5 * time.Second,
		UpgradeTransport: &http.Transport{
			DialContext:     c.DialContext,
			TLSClientConfig: tlsConfig,
		},
	})
	if err != nil {
		return nil, nil, err
	}
	wrapper, err := rest.HTTPWrappersForConfig(c.Config, upgrader)
	if err != nil {
		return nil, nil, err
	}
	return wrapper, upgrader, nil
}
