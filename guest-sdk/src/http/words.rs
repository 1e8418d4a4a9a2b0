//! Why a `wasi:http` request failed, in plain words: the host's `error-code` said as a
//! person would (`DNS lookup failed for api.example: …`, `connection refused by …`,
//! `HTTP request denied: …`), never as Rust debug text.

use wasi::http::types::{ErrorCode, FieldSizePayload, HeaderError};

/// `code`, the host's answer to a request to `host` (its authority: name and port), in
/// words.
pub(super) fn error_code(code: &ErrorCode, host: &str) -> String {
    use ErrorCode::*;
    match code {
        DnsTimeout => format!("DNS lookup for {host} timed out"),
        DnsError(p) => match p.rcode.as_deref() {
            Some(why) if !why.is_empty() => format!("DNS lookup failed for {host}: {why}"),
            _ => format!("DNS lookup failed for {host}"),
        },
        DestinationNotFound => format!("{host} was not found"),
        DestinationUnavailable => format!("{host} cannot be reached"),
        DestinationIpProhibited => format!(
            "HTTP request denied: {host} has only addresses the sandbox does not reach \
             (loopback, private or link-local; an allowed address must be named as such)"
        ),
        DestinationIpUnroutable => format!("{host} has no routable address"),
        ConnectionRefused => format!("connection refused by {host}"),
        ConnectionTerminated => format!("{host} closed the connection"),
        ConnectionTimeout => format!("connecting to {host} timed out"),
        ConnectionReadTimeout => format!("{host} did not answer in time"),
        ConnectionWriteTimeout => format!("sending the request to {host} timed out"),
        ConnectionLimitReached => "HTTP request refused: too many requests in flight \
                                   (limits.http_requests)"
            .to_string(),
        TlsProtocolError => format!("TLS with {host} failed"),
        TlsCertificateError => format!("{host}'s TLS certificate is not valid"),
        TlsAlertReceived(p) => match p.alert_message.as_deref() {
            Some(why) if !why.is_empty() => format!("{host} refused TLS: {why}"),
            _ => format!("{host} refused TLS"),
        },
        HttpRequestDenied => format!(
            "HTTP request denied: {host} is not granted (the manifest's permissions.http, \
             granted with `zot ext grant`)"
        ),
        HttpRequestLengthRequired => format!("{host} wants the request's length"),
        HttpRequestBodySize(size) => too_big("the request body", *size),
        HttpRequestMethodInvalid => "the request's method is not valid".to_string(),
        HttpRequestUriInvalid => "the request's URL is not valid".to_string(),
        HttpRequestUriTooLong => "the request's URL is too long".to_string(),
        HttpRequestHeaderSectionSize(size) => too_big("the request headers", size.map(u64::from)),
        HttpRequestHeaderSize(field) => field_too_big("request header", field.as_ref()),
        HttpRequestTrailerSectionSize(size) => too_big("the request trailers", size.map(u64::from)),
        HttpRequestTrailerSize(field) => field_too_big("request trailer", Some(field)),
        HttpResponseIncomplete => format!("the response from {host} was cut short"),
        HttpResponseHeaderSectionSize(size) => too_big("the response headers", size.map(u64::from)),
        HttpResponseHeaderSize(field) => field_too_big("response header", Some(field)),
        HttpResponseBodySize(size) => too_big("the response body", *size),
        HttpResponseTrailerSectionSize(size) => {
            too_big("the response trailers", size.map(u64::from))
        }
        HttpResponseTrailerSize(field) => field_too_big("response trailer", Some(field)),
        HttpResponseTransferCoding(coding) => unsupported("transfer coding", coding.as_deref()),
        HttpResponseContentCoding(coding) => unsupported("content coding", coding.as_deref()),
        HttpResponseTimeout => format!("{host} did not answer in time"),
        HttpUpgradeFailed => format!("the connection upgrade with {host} failed"),
        HttpProtocolError => format!("{host} did not speak HTTP as expected"),
        LoopDetected => format!("a request loop was detected at {host}"),
        ConfigurationError => "HTTP is misconfigured in the host".to_string(),
        InternalError(why) => match why.as_deref() {
            Some(why) if !why.is_empty() => format!("HTTP failed in the host: {why}"),
            _ => "HTTP failed in the host".to_string(),
        },
    }
}

/// A header the host refused, in words.
pub(super) fn header_error(e: &HeaderError) -> String {
    match e {
        HeaderError::InvalidSyntax => "a header name or value is not valid".to_string(),
        HeaderError::Forbidden => "a header the sandbox sets itself was given".to_string(),
        HeaderError::Immutable => "the headers can no longer be changed".to_string(),
    }
}

fn too_big(what: &str, size: Option<u64>) -> String {
    match size {
        Some(size) => format!("{what} is too large ({size} bytes)"),
        None => format!("{what} is too large"),
    }
}

fn field_too_big(what: &str, field: Option<&FieldSizePayload>) -> String {
    match field.and_then(|f| f.field_name.as_deref()) {
        Some(name) => format!("the {what} {name} is too large"),
        None => format!("a {what} is too large"),
    }
}

fn unsupported(what: &str, coding: Option<&str>) -> String {
    match coding {
        Some(coding) => format!("the response's {what} {coding} is not supported"),
        None => format!("the response's {what} is not supported"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasi::http::types::{DnsErrorPayload, TlsAlertReceivedPayload};

    #[test]
    fn failures_are_said_in_words_naming_the_host() {
        let dns = ErrorCode::DnsError(DnsErrorPayload {
            rcode: Some("failed to lookup address information".into()),
            info_code: None,
        });
        assert_eq!(
            error_code(&dns, "api.example"),
            "DNS lookup failed for api.example: failed to lookup address information"
        );
        assert_eq!(
            error_code(&ErrorCode::ConnectionRefused, "127.0.0.1:9"),
            "connection refused by 127.0.0.1:9"
        );
        assert!(error_code(&ErrorCode::HttpRequestDenied, "wttr.in")
            .starts_with("HTTP request denied: wttr.in is not granted"));
        let alert = ErrorCode::TlsAlertReceived(TlsAlertReceivedPayload {
            alert_id: Some(40),
            alert_message: None,
        });
        assert_eq!(error_code(&alert, "x.test"), "x.test refused TLS");
        assert_eq!(
            header_error(&HeaderError::InvalidSyntax),
            "a header name or value is not valid"
        );
    }

    #[test]
    fn no_code_is_said_as_debug_text() {
        let field = || FieldSizePayload {
            field_name: Some("x-big".into()),
            field_size: Some(9),
        };
        let codes = [
            ErrorCode::DnsTimeout,
            ErrorCode::DnsError(DnsErrorPayload {
                rcode: None,
                info_code: Some(3),
            }),
            ErrorCode::DestinationIpProhibited,
            ErrorCode::ConnectionTimeout,
            ErrorCode::ConnectionLimitReached,
            ErrorCode::TlsCertificateError,
            ErrorCode::HttpRequestBodySize(Some(10)),
            ErrorCode::HttpRequestHeaderSize(None),
            ErrorCode::HttpResponseHeaderSize(field()),
            ErrorCode::HttpResponseTransferCoding(Some("gzip".into())),
            ErrorCode::InternalError(None),
        ];
        for code in &codes {
            let said = error_code(code, "h.test");
            let debug = format!("{code:?}");
            assert!(
                !said.contains("ErrorCode") && !said.contains('{') && !said.contains("Some("),
                "{debug} said as {said:?}"
            );
        }
    }
}
