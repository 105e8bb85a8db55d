//! What the bench binaries share: medians and a minimal HTTP/1.1 client on
//! one kept-alive connection (as an agent host's pooled client would call).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One kept-alive HTTP/1.1 connection.
pub struct Conn {
    host: String,
    io: BufReader<TcpStream>,
}

impl Conn {
    pub fn open(host: &str) -> Self {
        let s = TcpStream::connect(host).unwrap_or_else(|e| panic!("connect to {host}: {e}"));
        s.set_nodelay(true).ok();
        Self {
            host: host.to_string(),
            io: BufReader::new(s),
        }
    }

    /// POSTs a JSON body; returns the status and the response body.
    pub fn post(&mut self, path: &str, body: &str) -> (u16, Vec<u8>) {
        let req = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.host,
            body.len()
        );
        self.io.get_mut().write_all(req.as_bytes()).expect("write");
        let mut line = String::new();
        self.io.read_line(&mut line).expect("status line");
        let status = line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let mut len = 0usize;
        loop {
            line.clear();
            self.io.read_line(&mut line).expect("header");
            if line == "\r\n" {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
        let mut buf = vec![0; len];
        self.io.read_exact(&mut buf).expect("body");
        (status, buf)
    }
}
