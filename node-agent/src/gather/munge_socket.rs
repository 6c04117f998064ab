//! A munge client that talks to munged's Unix socket directly: encode a credential, decode one.
//! `launchguard check` used to run `munge -n | unmunge` for the round trip; two process starts were
//! most of its wall time. This speaks the same wire protocol libmunge does, so munged sees exactly
//! what `munge -n` and `unmunge` send.
//!
//! Wire format (MUNGE 0.5.x, `src/libcommon/m_msg.c` and `m_msg.h` of github.com/dun/munge; version
//! 4 of the message format, unchanged since 0.5): every integer is big-endian.
//! - header, 11 bytes: magic `0x00606D4B` (u32), version `4` (u8), type (u8), retry (u8), body
//!   length (u32);
//! - encode request (type 2): cipher, mac, zip (u8, 1 = munged's default), realm length (u8, 0),
//!   ttl (u32, 0 = default), auth uid, auth gid (u32, `0xFFFFFFFF` = any), data length (u32, 0: `-n`);
//! - encode response (type 3): error number (u8), error length (u8), error string (NUL-terminated),
//!   data length (u32), data (the `MUNGE:…:` credential);
//! - decode request (type 4): data length (u32), data (the credential);
//! - decode response (type 5): error number (u8), error length (u8), error string, then the
//!   credential's fields (only the error is read here).
//!
//! munged authenticates the client with `SO_PEERCRED` on Linux (no fd passing) and closes the
//! connection after one reply. Error numbers are `munge_err_t` (`munge.h`): 0 is success, 14 an
//! invalid credential (another key), 15 expired, 17 replayed.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

const MAGIC: u32 = 0x0060_6D4B;
const VERSION: u8 = 4;
const ENC_REQ: u8 = 2;
const ENC_RSP: u8 = 3;
const DEC_REQ: u8 = 4;
const DEC_RSP: u8 = 5;
/// Largest reply read (munged's own MUNGE_MAXIMUM_REQ_LEN is 1 MiB; a `-n` credential is ~100 B).
const MAX_REPLY: u32 = 1 << 20;

/// A request sent to munged whose reply has not been read yet: munged answers while the caller
/// does other work, and [`Sent::encoded`] or [`Sent::decoded`] reads the answer, each read bounded
/// by the deadline given when it was sent (a reply is two reads: header and body).
#[derive(Debug)]
pub struct Sent {
    stream: UnixStream,
    socket: String,
    want: u8,
}

/// Encodes an empty credential (`munge -n -S socket`); returns the `MUNGE:…:` string.
/// Errors name the step and munged's own message (`munged: Invalid credential`).
pub fn encode(socket: &Path, deadline: Duration) -> Result<Vec<u8>, String> {
    send_encode(socket, deadline)?.encoded()
}

/// Sends `munge -n`'s request: connected and written, the reply left for [`Sent::encoded`].
pub fn send_encode(socket: &Path, deadline: Duration) -> Result<Sent, String> {
    // cipher, mac, zip: 1 = MUNGE_*_DEFAULT (munged's configured default); no realm.
    let mut body = vec![1u8, 1, 1, 0];
    body.extend_from_slice(&0u32.to_be_bytes()); // ttl: default
    body.extend_from_slice(&u32::MAX.to_be_bytes()); // auth uid: any
    body.extend_from_slice(&u32::MAX.to_be_bytes()); // auth gid: any
    body.extend_from_slice(&0u32.to_be_bytes()); // no payload
    send(socket, ENC_REQ, ENC_RSP, &body, deadline)
}

impl Sent {
    /// The credential of an encode request's reply ([`send_encode`]).
    pub fn encoded(self) -> Result<Vec<u8>, String> {
        let reply = self.reply()?;
        let rest = status(&reply)?;
        let (len, data) = rest
            .split_first_chunk::<4>()
            .ok_or("munged's encode reply ended early")?;
        let len = u32::from_be_bytes(*len) as usize;
        let cred = data.get(..len).ok_or("munged's encode reply ended early")?;
        Ok(cred.strip_suffix(b"\0").unwrap_or(cred).to_vec())
    }

    /// `Ok` when a decode request's reply ([`send_decode`]) says munged accepted the credential.
    pub fn decoded(self) -> Result<(), String> {
        status(&self.reply()?).map(|_| ())
    }

    /// The reply's body, after checking its header.
    fn reply(mut self) -> Result<Vec<u8>, String> {
        let socket = &self.socket;
        let io = |e: std::io::Error| format!("{socket}: {e}");
        let mut hdr = [0u8; 11];
        self.stream.read_exact(&mut hdr).map_err(io)?;
        let magic = u32::from_be_bytes([hdr[0], hdr[1], hdr[2], hdr[3]]);
        let len = u32::from_be_bytes([hdr[7], hdr[8], hdr[9], hdr[10]]);
        if magic != MAGIC || hdr[4] != VERSION {
            return Err(format!(
                "{socket}: not a munged reply (magic {magic:#x}, version {})",
                hdr[4]
            ));
        }
        if hdr[5] != self.want || len > MAX_REPLY {
            return Err(format!(
                "{socket}: unexpected munged reply (type {}, {len} bytes)",
                hdr[5]
            ));
        }
        let mut reply = vec![0u8; len as usize];
        self.stream.read_exact(&mut reply).map_err(io)?;
        Ok(reply)
    }
}

/// Decodes a credential (`unmunge -S socket`); `Ok` when munged accepts it.
pub fn decode(socket: &Path, cred: &[u8], deadline: Duration) -> Result<(), String> {
    send_decode(socket, cred, deadline)?.decoded()
}

/// Sends `unmunge`'s request for `cred`, the reply left for [`Sent::decoded`].
pub fn send_decode(socket: &Path, cred: &[u8], deadline: Duration) -> Result<Sent, String> {
    let mut body = Vec::with_capacity(cred.len() + 5);
    // libmunge sends the string with its NUL.
    body.extend_from_slice(&(cred.len() as u32 + 1).to_be_bytes());
    body.extend_from_slice(cred);
    body.push(0);
    send(socket, DEC_REQ, DEC_RSP, &body, deadline)
}

/// The error number and string at the start of a reply body: `Ok(rest)` on success.
fn status(reply: &[u8]) -> Result<&[u8], String> {
    let [errno, elen, rest @ ..] = reply else {
        return Err("munged's reply ended early".into());
    };
    let elen = *elen as usize;
    let msg = rest.get(..elen).ok_or("munged's reply ended early")?;
    if *errno != 0 {
        let text = String::from_utf8_lossy(msg.strip_suffix(b"\0").unwrap_or(msg));
        return Err(format!("munged: {} (munge error {errno})", text.trim()));
    }
    Ok(&rest[elen..])
}

/// One request on a fresh connection (munged answers one per connection), every later read and
/// write bounded by `deadline`; `want` is the reply type [`Sent`] accepts.
fn send(
    socket: &Path,
    kind: u8,
    want: u8,
    body: &[u8],
    deadline: Duration,
) -> Result<Sent, String> {
    let io = |e: std::io::Error| format!("{}: {e}", socket.display());
    let mut s = UnixStream::connect(socket).map_err(io)?;
    s.set_read_timeout(Some(deadline)).map_err(io)?;
    s.set_write_timeout(Some(deadline)).map_err(io)?;
    let mut msg = Vec::with_capacity(11 + body.len());
    msg.extend_from_slice(&MAGIC.to_be_bytes());
    msg.extend_from_slice(&[VERSION, kind, 0]);
    msg.extend_from_slice(&(body.len() as u32).to_be_bytes());
    msg.extend_from_slice(body);
    s.write_all(&msg).map_err(io)?;
    Ok(Sent {
        stream: s,
        socket: socket.display().to_string(),
        want,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_status_is_read_and_a_short_one_refused() {
        assert_eq!(status(&[0, 0, 9, 9]).unwrap(), &[9, 9]);
        let e = status(b"\x0e\x13Invalid credential\0\0\0").unwrap_err();
        assert_eq!(e, "munged: Invalid credential (munge error 14)");
        assert!(status(&[0]).is_err());
        assert!(status(&[3, 200, b'x']).is_err());
    }
}
