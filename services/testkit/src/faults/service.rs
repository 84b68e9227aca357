//! A service binary (`orders-pg` or `orders-mongo`) run as a child process on a port-0 address,
//! with only the environment the test gives it (and `WORKER_THREADS` from the test's own
//! environment unless the test sets it, so `WORKER_THREADS=1 cargo nextest run ...` runs the fault
//! tests on a current-thread runtime); its address is read from its first JSON log line.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

pub struct ServiceProcess {
    child: Child,
    pub addr: String,
}

impl ServiceProcess {
    /// Starts `binary` with `env` (nothing inherited but `PATH` and `WORKER_THREADS`) and waits for
    /// its address.
    pub fn start(binary: &str, env: &[(&str, String)]) -> Self {
        let mut command = Command::new(binary);
        command.env_clear().env("PATH", std::env::var("PATH").unwrap_or_default());
        command.env("BIND_ADDR", "127.0.0.1:0").env("LOG_FORMAT", "json").env("RUST_LOG", "info");
        if let Some(threads) = std::env::var_os("WORKER_THREADS") {
            command.env("WORKER_THREADS", threads);
        }
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().expect("start the service");
        let stdout = child.stdout.take().expect("stdout");
        let (address_tx, address_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let Ok(event) = serde_json::from_str::<serde_json::Value>(&line) else { continue };
                let message = event["message"].as_str().unwrap_or("");
                if let Some(address) = message.strip_prefix("listening on ") {
                    let _ = address_tx.send(address.to_owned());
                } else if message.starts_with("shutting down") || event["level"] == "WARN" {
                    eprintln!("service: {line}"); // the drain's figures, shown with the test's output
                }
            }
        });
        let addr = address_rx.recv_timeout(Duration::from_secs(60)).expect("the service logs its address");
        Self { child, addr }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        let status = Command::new("kill").args(["-TERM", &self.pid().to_string()]).status().expect("kill -TERM");
        assert!(status.success(), "kill -TERM {}", self.pid());
    }

    /// Waits for the process to exit; `None` if it is still running after `within`.
    pub fn wait_exit(&mut self, within: Duration) -> Option<ExitStatus> {
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if started.elapsed() > within {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Kills the process (SIGKILL) and waits for it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServiceProcess {
    fn drop(&mut self) {
        self.kill();
    }
}
