package s3client

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
)

// ErrCredentials marks an error of the worker's credential chain: no source gave usable
// credentials (nothing in the environment, an unknown profile, an unreadable web-identity
// token, ...). Retrying the request cannot help.
var ErrCredentials = errors.New("s3client: no usable AWS credentials")

// markedCredentials marks every error of the provider it wraps with ErrCredentials, so that
// the failure is recognised by errors.Is whatever the provider's message says.
//
// It wraps the aws.CredentialsCache that LoadDefaultConfig returns rather than the chain
// inside it: the cache keeps its options (expiry window, jitter) and its single-flight
// refresh, and a cached success passes through untouched. The SDK's checks that look into
// a provider (anonymous credentials, the user agent's credential source) are forwarded.
type markedCredentials struct {
	aws.CredentialsProvider
}

func (m markedCredentials) Retrieve(ctx context.Context) (aws.Credentials, error) {
	c, err := m.CredentialsProvider.Retrieve(ctx)
	if err != nil && ctx.Err() == nil {
		// The caller's own cancellation or deadline is not a credentials problem.
		return c, credentialsError{err}
	}
	return c, err
}

// IsCredentialsProvider lets aws.IsCredentialsProvider see the wrapped provider: S3 signs
// nothing for aws.AnonymousCredentials.
func (m markedCredentials) IsCredentialsProvider(target aws.CredentialsProvider) bool {
	return aws.IsCredentialsProvider(m.CredentialsProvider, target)
}

// ProviderSources reports the wrapped provider's sources to the SDK's user agent.
func (m markedCredentials) ProviderSources() []aws.CredentialSource {
	if s, ok := m.CredentialsProvider.(aws.CredentialProviderSource); ok {
		return s.ProviderSources()
	}
	return nil
}

// credentialsError keeps the provider's message as it is (s3io adds what to check) and
// adds ErrCredentials to the chain errors.Is searches.
type credentialsError struct{ err error }

func (e credentialsError) Error() string   { return e.err.Error() }
func (e credentialsError) Unwrap() []error { return []error{ErrCredentials, e.err} }

// markConfigError marks the failures of LoadDefaultConfig that are about credentials: a
// profile named (AWS_PROFILE) but not in the shared files, or one whose role cannot be
// assumed as configured. Other failures (a malformed file, a bad setting) are not.
func markConfigError(err error) error {
	var (
		noProfile awsconfig.SharedConfigProfileNotExistError
		badRole   awsconfig.SharedConfigAssumeRoleError
		noARN     awsconfig.CredentialRequiresARNError
		noMFA     awsconfig.AssumeRoleTokenProviderNotSetError
	)
	if errors.As(err, &noProfile) || errors.As(err, &badRole) || errors.As(err, &noARN) || errors.As(err, &noMFA) {
		return credentialsError{err}
	}
	return err
}
