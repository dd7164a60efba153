package arm

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// HTTP headers of the ARM resource provider contract.
const (
	HeaderRequestID            = "X-Ms-Request-Id"
	HeaderClientRequestID      = "X-Ms-Client-Request-Id"
	HeaderCorrelationRequestID = "X-Ms-Correlation-Request-Id"
	HeaderErrorCode            = "X-Ms-Error-Code"
	HeaderSystemData           = "X-Ms-Arm-Resource-System-Data"
	HeaderHomeTenantID         = "X-Ms-Home-Tenant-Id"
	HeaderClientObjectID       = "X-Ms-Client-Object-Id"
	HeaderAsyncNotificationURI = "Azure-Asyncnotificationuri"
	HeaderAsyncOperation       = "Azure-AsyncOperation"
	HeaderLocation             = "Location"
	HeaderRetryAfter           = "Retry-After"
	HeaderIfMatch              = "If-Match"
	HeaderIfNoneMatch          = "If-None-Match"
	HeaderETag                 = "ETag"
)

// gRPC metadata keys that carry the correlation IDs to Cluster Service (lowercase, as gRPC
// requires).
const (
	MetadataRequestID            = "x-ms-request-id"
	MetadataClientRequestID      = "x-ms-client-request-id"
	MetadataCorrelationRequestID = "x-ms-correlation-request-id"
)

// CreatedByType values.
const (
	CreatedByUser            = "User"
	CreatedByApplication     = "Application"
	CreatedByManagedIdentity = "ManagedIdentity"
	CreatedByKey             = "Key"
)

// SystemData is ARM's record of who created and last modified a resource. ARM sends it in
// x-ms-arm-resource-system-data; the RP stores it and returns it.
type SystemData struct {
	CreatedBy          string     `json:"createdBy,omitempty"`
	CreatedByType      string     `json:"createdByType,omitempty"`
	CreatedAt          *time.Time `json:"createdAt,omitempty"`
	LastModifiedBy     string     `json:"lastModifiedBy,omitempty"`
	LastModifiedByType string     `json:"lastModifiedByType,omitempty"`
	LastModifiedAt     *time.Time `json:"lastModifiedAt,omitempty"`
}

// ParseSystemData decodes the x-ms-arm-resource-system-data header. An empty header gives nil.
func ParseSystemData(header string) (*SystemData, error) {
	if header == "" {
		return nil, nil
	}
	var sd SystemData
	if err := json.Unmarshal([]byte(header), &sd); err != nil {
		return nil, fmt.Errorf("invalid %s header: %w", HeaderSystemData, err)
	}
	// The header is JSON, so a NUL arrives escaped (\u0000), and the stored document (PostgreSQL's
	// jsonb) cannot hold one: such a header is as invalid as one that does not parse.
	for _, f := range []string{sd.CreatedBy, sd.CreatedByType, sd.LastModifiedBy, sd.LastModifiedByType} {
		if strings.ContainsRune(f, 0) {
			return nil, fmt.Errorf("invalid %s header: a value holds a NUL character", HeaderSystemData)
		}
	}
	return &sd, nil
}

// Merge updates the stored systemData with a newer one: creation fields are kept from the
// first write, modification fields come from the latest.
func (sd *SystemData) Merge(newer *SystemData) *SystemData {
	switch {
	case sd == nil:
		return newer
	case newer == nil:
		return sd
	}
	out := *sd
	if out.CreatedBy == "" && out.CreatedAt == nil {
		out.CreatedBy, out.CreatedByType, out.CreatedAt = newer.CreatedBy, newer.CreatedByType, newer.CreatedAt
	}
	if newer.LastModifiedBy != "" || newer.LastModifiedAt != nil {
		out.LastModifiedBy, out.LastModifiedByType, out.LastModifiedAt = newer.LastModifiedBy, newer.LastModifiedByType, newer.LastModifiedAt
	}
	return &out
}
