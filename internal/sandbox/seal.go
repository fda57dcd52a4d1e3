package sandbox

import "github.com/agentd/agentd/internal/secret"

// Sealer encrypts the runtime session keys at rest.
type Sealer = secret.Sealer
