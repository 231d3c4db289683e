//! TLS for connections (the `tls` feature): rustls with the *ring* provider, checking the
//! server's certificate as the [`SslMode`] says.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::options::{RootCertificates, SslMode};
use crate::{Error, Result};

fn config_error(reason: String, source: Option<curator_model::BoxError>) -> Error {
    Error::Config { reason, source }
}

/// The connector for `mode`, trusting `roots` (else libpq's `~/.postgresql/root.crt` when it
/// exists). (`disable` never reaches here: it connects without TLS.)
///
/// # Errors
///
/// [`Error::Config`] when the root certificates cannot be read, or `verify-ca` /
/// `verify-full` finds none to trust.
pub(crate) fn connector(
    mode: SslMode,
    roots: Option<&RootCertificates>,
) -> Result<MakeRustlsConnect> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| config_error("the TLS protocol versions".into(), Some(Box::new(e))))?;
    let roots = match roots {
        Some(roots) => Some(load(roots)?),
        None => default_root_file().map(|file| load(&RootCertificates::File(file))).transpose()?,
    };
    let verifier: Arc<dyn ServerCertVerifier> = match (mode, roots) {
        (SslMode::VerifyFull, Some(roots)) => web_pki(roots, &provider)?,
        (
            SslMode::VerifyCa | SslMode::Prefer | SslMode::Require | SslMode::Disable,
            Some(roots),
        ) => Arc::new(AuthorityOnly(web_pki(roots, &provider)?)),
        (SslMode::VerifyCa | SslMode::VerifyFull, None) => {
            return Err(config_error(
                format!(
                    "sslmode={mode} needs the certificates of the authorities to trust: give \
                     sslrootcert=PATH (or `system`) in the URL, PGSSLROOTCERT, or \
                     ~/.postgresql/root.crt"
                ),
                None,
            ));
        }
        (_, None) => Arc::new(AnyCertificate(provider)),
    };
    let config =
        builder.dangerous().with_custom_certificate_verifier(verifier).with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// libpq's default root certificate file, when it exists.
fn default_root_file() -> Option<PathBuf> {
    let file = Path::new(&std::env::var_os("HOME")?).join(".postgresql/root.crt");
    file.is_file().then_some(file)
}

fn load(roots: &RootCertificates) -> Result<RootCertStore> {
    let mut store = RootCertStore::empty();
    match roots {
        RootCertificates::File(path) => {
            let what = || format!("cannot read root certificates from {}", path.display());
            let certificates = CertificateDer::pem_file_iter(path)
                .map_err(|e| config_error(what(), Some(Box::new(e))))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| config_error(what(), Some(Box::new(e))))?;
            let (added, _) = store.add_parsable_certificates(certificates);
            if added == 0 {
                return Err(config_error(
                    format!("{} holds no usable PEM certificate", path.display()),
                    None,
                ));
            }
        }
        RootCertificates::System => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = store.add_parsable_certificates(found.certs);
            if added == 0 {
                let errors: Vec<String> = found.errors.iter().map(ToString::to_string).collect();
                return Err(config_error(
                    format!(
                        "sslrootcert=system: the operating system trusts no authority ({})",
                        if errors.is_empty() { "none found".to_owned() } else { errors.join("; ") }
                    ),
                    None,
                ));
            }
        }
    }
    Ok(store)
}

fn web_pki(
    roots: RootCertStore,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<WebPkiServerVerifier>> {
    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(provider))
        .build()
        .map_err(|e| {
            config_error("cannot check certificates with these roots".into(), Some(Box::new(e)))
        })
}

/// `verify-ca`: the chain must reach a trusted authority; the name in the certificate is
/// not checked.
#[derive(Debug)]
struct AuthorityOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AuthorityOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.0.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `prefer` and `require` without root certificates (as libpq): encrypted, with any
/// certificate. The handshake's signatures are still checked.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
