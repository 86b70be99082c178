//! The message brokers, each from its own registry: mosquitto and RabbitMQ from Debian,
//! the NATS server built from its Go module into `.tools/`. Each gets a configuration file
//! of its own in its temporary folder, listeners on free loopback ports only, and data
//! (JetStream, Mnesia) in that folder.

use std::ffi::CString;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::Duration;

use wsbench_supervisor::Launch;

use crate::process::{Peer, free_ports, installed, io, temp_dir};
use crate::{PeerError, repo_root};

const MOSQUITTO: &str = "/usr/sbin/mosquitto";
const MOSQUITTO_PASSWD: &str = "/usr/bin/mosquitto_passwd";
const RABBITMQ_SERVER: &str = "/usr/lib/rabbitmq/bin/rabbitmq-server";
const RABBITMQCTL: &str = "/usr/lib/rabbitmq/bin/rabbitmqctl";
const EPMD: &str = "/usr/bin/epmd";

fn write(peer: &'static str, path: &Path, text: &str) -> Result<(), PeerError> {
    std::fs::write(path, text).map_err(|source| io(peer, format!("writing {}", path.display()), source))
}

/// mosquitto with a WebSocket listener taking anonymous clients (any path; subprotocol
/// `mqtt` or none), and a second one that refuses them (no anonymous clients, no password
/// file: every CONNECT is answered "not authorized"). mosquitto 2.0.11 exits with "Unable
/// to start any listening sockets" when all its listeners are WebSocket ones, so it also
/// gets an MQTT TCP listener. Ports: main (WebSocket), `refusing` (WebSocket), `tcp`.
pub fn start_mosquitto() -> Result<Peer, PeerError> {
    const PEER: &str = "mosquitto";
    installed(PEER, Path::new(MOSQUITTO))?;
    let dir = temp_dir(PEER)?;
    let [port, refusing, tcp] = free_ports(PEER)?;
    let config = dir.join("mosquitto.conf");
    write(
        PEER,
        &config,
        &format!(
            "per_listener_settings true\npersistence false\nlog_dest stderr\nlog_type error\nlog_type warning\n\
             listener {port} 127.0.0.1\nprotocol websockets\nsocket_domain ipv4\nallow_anonymous true\n\
             listener {refusing} 127.0.0.1\nprotocol websockets\nsocket_domain ipv4\nallow_anonymous false\n\
             listener {tcp} 127.0.0.1\nsocket_domain ipv4\nallow_anonymous true\n"
        ),
    )?;
    let command = Launch::new(PEER, MOSQUITTO).arg("-c").arg(&config);
    let mut peer = Peer::spawn(PEER, command, dir)?
        .with_port("websocket", port)
        .with_port("refusing", refusing)
        .with_port("tcp", tcp);
    peer.wait_for_ports(Duration::from_secs(10))?;
    Ok(peer)
}

/// mosquitto that keeps its sessions on disk (`persistence true`: QoS 1 messages queued for
/// a kept session outlive a restart) and can be restarted by a shell script in its folder,
/// `restart.sh` (SIGTERM to the pid in `mosquitto.pid`, which saves the sessions; down for
/// `down`; started again as a daemon writing its pid there). The first broker is the test's
/// child, a zombie once it exits: the script waits for its exit, not for its pid to go. The broker the script started is
/// stopped by that pid when the peer drops. Ports: main (WebSocket), `tcp`.
pub fn start_mosquitto_restartable(down: Duration) -> Result<Peer, PeerError> {
    const PEER: &str = "mosquitto";
    installed(PEER, Path::new(MOSQUITTO))?;
    let dir = temp_dir(PEER)?;
    // mosquitto started as root runs as its own user, which must write its pid and data here.
    let _ = std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777));
    let [port, tcp] = free_ports(PEER)?;
    let (config, pid, script) =
        (dir.join("mosquitto.conf"), dir.join("mosquitto.pid"), dir.join("restart.sh"));
    write(
        PEER,
        &config,
        &format!(
            "persistence true\npersistence_location {}/\npid_file {}\nlog_dest stderr\nlog_type error\n\
             max_queued_messages 100000\nlistener {port} 127.0.0.1\nprotocol websockets\nsocket_domain ipv4\n\
             allow_anonymous true\nlistener {tcp} 127.0.0.1\nsocket_domain ipv4\nallow_anonymous true\n",
            dir.display(),
            pid.display()
        ),
    )?;
    write(
        PEER,
        &script,
        &format!(
            "#!/bin/sh\n# Restarts this folder's mosquitto: SIGTERM (it saves its sessions), down, started again.\n\
             set -e\npid=$(cat '{pid}')\nkill \"$pid\"\nwhile grep -qs '^State:[^Z]*$' /proc/$pid/status; do sleep 0.05; done\n\
             sleep {down}\nexec {MOSQUITTO} -c '{config}' -d\n",
            pid = pid.display(),
            config = config.display(),
            down = down.as_secs_f64(),
        ),
    )?;
    let _ = std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755));
    let command = Launch::new(PEER, MOSQUITTO).arg("-c").arg(&config);
    let stop_restarted =
        Launch::shell(PEER, &format!("test -s '{0}' && kill \"$(cat '{0}')\"", pid.display()));
    let mut peer = Peer::spawn(PEER, command, dir)?
        .with_port("websocket", port)
        .with_port("tcp", tcp)
        .with_clean_up(stop_restarted);
    peer.wait_for_ports(Duration::from_secs(10))?;
    Ok(peer)
}

/// mosquitto whose WebSocket listener takes only `user` with `password`, from a password
/// file `mosquitto_passwd` writes (no anonymous clients: a wrong password is answered "not
/// authorized"), beside the MQTT TCP listener mosquitto 2.0.11 needs. Ports: main
/// (WebSocket), `tcp`.
pub fn start_mosquitto_with_password(user: &str, password: &str) -> Result<Peer, PeerError> {
    const PEER: &str = "mosquitto";
    installed(PEER, Path::new(MOSQUITTO))?;
    installed(PEER, Path::new(MOSQUITTO_PASSWD))?;
    let dir = temp_dir(PEER)?;
    let [port, tcp] = free_ports(PEER)?;
    let passwords = dir.join("passwords");
    let passwd = Launch::new("mosquitto_passwd", MOSQUITTO_PASSWD).arg("-b").arg("-c").arg(&passwords);
    run_to_success(PEER, passwd.arg(user).arg(password))?;
    let config = dir.join("mosquitto.conf");
    write(
        PEER,
        &config,
        &format!(
            "per_listener_settings true\npersistence false\nlog_dest stderr\nlog_type error\nlog_type warning\n\
             listener {port} 127.0.0.1\nprotocol websockets\nsocket_domain ipv4\nallow_anonymous false\n\
             password_file {}\nlistener {tcp} 127.0.0.1\nsocket_domain ipv4\nallow_anonymous true\n",
            passwords.display()
        ),
    )?;
    let command = Launch::new(PEER, MOSQUITTO).arg("-c").arg(&config);
    let mut peer = Peer::spawn(PEER, command, dir)?.with_port("websocket", port).with_port("tcp", tcp);
    peer.wait_for_ports(Duration::from_secs(10))?;
    Ok(peer)
}

/// Runs `launch` (a setup command of `peer`'s) to its successful end.
fn run_to_success(peer: &'static str, launch: Launch) -> Result<(), PeerError> {
    match launch.run_to_completion(Duration::from_secs(60)) {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(PeerError::DidNotStart {
            peer,
            reason: format!("a setup command {}", wsbench_supervisor::describe(status)),
        }),
        Err(error) => Err(PeerError::Start { peer, error }),
    }
}

/// The NATS server with a WebSocket listener (path `/mqtt`: MQTT 3.1.1; other paths: the
/// NATS protocol) and an MQTT listener, which needs JetStream (store in the peer's folder)
/// and a server name. Ports: main (WebSocket), `client` (NATS), `mqtt` (MQTT over TCP).
pub fn start_nats() -> Result<Peer, PeerError> {
    const PEER: &str = "nats-server";
    let binary = repo_root().join(".tools/nats-server");
    installed(PEER, &binary)?;
    let dir = temp_dir(PEER)?;
    let [websocket, client, mqtt] = free_ports(PEER)?;
    let config = dir.join("nats.conf");
    write(
        PEER,
        &config,
        &format!(
            "listen: \"127.0.0.1:{client}\"\nserver_name: wsbench_nats\n\
             jetstream {{ store_dir: \"{}\" }}\n\
             websocket {{ listen: \"127.0.0.1:{websocket}\", no_tls: true }}\n\
             mqtt {{ listen: \"127.0.0.1:{mqtt}\" }}\n",
            dir.join("jetstream").display()
        ),
    )?;
    let command = Launch::new(PEER, &binary).arg("-c").arg(&config);
    let mut peer = Peer::spawn(PEER, command, dir)?
        .with_port("websocket", websocket)
        .with_port("client", client)
        .with_port("mqtt", mqtt);
    peer.wait_for_ports(Duration::from_secs(20))?;
    Ok(peer)
}

/// The `rabbitmq` user's uid and gid, when this process is root and must hand the server
/// to it (RabbitMQ refuses to run as root from its Debian wrapper; we start the server
/// script directly as that user).
fn rabbitmq_user() -> Option<(u32, u32)> {
    // SAFETY: getuid never fails; getpwnam returns a pointer to static storage or null.
    unsafe {
        if libc::getuid() != 0 {
            return None;
        }
        let name = CString::new("rabbitmq").ok()?;
        let entry = libc::getpwnam(name.as_ptr());
        if entry.is_null() { None } else { Some(((*entry).pw_uid, (*entry).pw_gid)) }
    }
}

fn chown_tree(peer: &'static str, dir: &Path, (uid, gid): (u32, u32)) -> Result<(), PeerError> {
    let chown = Launch::new("chown", "chown").arg("-R").arg(format!("{uid}:{gid}")).arg(dir);
    match chown.run_to_completion(Duration::from_secs(30)) {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(PeerError::DidNotStart {
            peer,
            reason: format!("chown of {} {}", dir.display(), wsbench_supervisor::describe(status)),
        }),
        Err(error) => Err(PeerError::Start { peer, error }),
    }
}

/// Writes RabbitMQ's configuration: no AMQP, STOMP or MQTT TCP listeners, web-stomp and
/// web-mqtt on loopback, the two plugins enabled (the plugins file is what
/// `rabbitmq-plugins enable --offline` writes).
fn rabbitmq_files(dir: &Path, stomp: u16, mqtt: u16) -> Result<(), PeerError> {
    const PEER: &str = "rabbitmq";
    write(
        PEER,
        &dir.join("rabbitmq.conf"),
        &format!(
            "listeners.tcp = none\nstomp.listeners.tcp = none\nmqtt.listeners.tcp = none\n\
             web_stomp.tcp.ip = 127.0.0.1\nweb_stomp.tcp.port = {stomp}\n\
             web_mqtt.tcp.ip = 127.0.0.1\nweb_mqtt.tcp.port = {mqtt}\n"
        ),
    )?;
    write(PEER, &dir.join("enabled_plugins"), "[rabbitmq_web_stomp,rabbitmq_web_mqtt].\n")?;
    for sub in ["mnesia", "log"] {
        std::fs::create_dir_all(dir.join(sub))
            .map_err(|source| io(PEER, format!("creating {sub}"), source))?;
    }
    Ok(())
}

/// A RabbitMQ command (server, rabbitmqctl, epmd) with this node's environment: its own
/// node name, epmd port (epmd on 127.0.0.1), distribution port, files and HOME (cookie).
fn rabbitmq_command(
    program: &str,
    dir: &Path,
    node: &str,
    epmd: u16,
    dist: u16,
    user: Option<(u32, u32)>,
) -> Launch {
    let mut launch = Launch::new(program.rsplit('/').next().unwrap_or(program).to_owned(), program);
    let file = |name: &str| -> PathBuf { dir.join(name) };
    let command = launch.command_mut();
    command
        .current_dir(dir)
        .env("HOME", dir)
        .env("RABBITMQ_NODENAME", node)
        .env("ERL_EPMD_ADDRESS", "127.0.0.1")
        .env("ERL_EPMD_PORT", epmd.to_string())
        .env("RABBITMQ_DIST_PORT", dist.to_string())
        .env("RABBITMQ_CONFIG_FILE", file("rabbitmq.conf"))
        .env("RABBITMQ_ENABLED_PLUGINS_FILE", file("enabled_plugins"))
        .env("RABBITMQ_MNESIA_BASE", file("mnesia"))
        .env("RABBITMQ_LOG_BASE", file("log"))
        .env("RABBITMQ_LOGS", "-");
    if let Some((uid, gid)) = user {
        std::os::unix::process::CommandExt::uid(command, uid);
        std::os::unix::process::CommandExt::gid(command, gid);
    }
    launch
}

/// RabbitMQ with the web-stomp and web-mqtt plugins (both on the path `/ws`), as a node of
/// its own (name, epmd, ports), stopped with `rabbitmqctl stop` and its epmd killed after.
/// Takes ~11 s. Ports: main (web-stomp), `mqtt` (web-mqtt), `epmd` and `dist` (the node's).
pub fn start_rabbitmq() -> Result<Peer, PeerError> {
    const PEER: &str = "rabbitmq";
    installed(PEER, Path::new(RABBITMQ_SERVER))?;
    let dir = temp_dir(PEER)?;
    let [stomp, mqtt, epmd, dist] = free_ports(PEER)?;
    rabbitmq_files(&dir, stomp, mqtt)?;
    let user = rabbitmq_user();
    if let Some(user) = user {
        chown_tree(PEER, &dir, user)?;
    }
    let node = format!("wsbench{stomp}@localhost");
    let server = rabbitmq_command(RABBITMQ_SERVER, &dir, &node, epmd, dist, user);
    let stop = rabbitmq_command(RABBITMQCTL, &dir, &node, epmd, dist, user).arg("stop");
    let kill_epmd = rabbitmq_command(EPMD, &dir, &node, epmd, dist, user).arg("-kill");
    let mut peer = Peer::spawn(PEER, server, dir)?
        .with_port("stomp", stomp)
        .with_port("mqtt", mqtt)
        .with_graceful_stop(stop)
        .with_clean_up(kill_epmd);
    peer.wait_for_ports(Duration::from_secs(60))?;
    // Not waited for: what `add_rabbitmq_user`'s rabbitmqctl reaches the node by.
    Ok(peer.with_port("epmd", epmd).with_port("dist", dist))
}

/// Adds the user `name` with `password` to the RabbitMQ `peer` (started by
/// [`start_rabbitmq`]), with every permission on the virtual host `/`, by `rabbitmqctl`
/// against that node. Takes a few seconds.
pub fn add_rabbitmq_user(peer: &Peer, name: &str, password: &str) -> Result<(), PeerError> {
    const PEER: &str = "rabbitmq";
    let port = |which| {
        peer.port_of(which).ok_or_else(|| io(PEER, format!("its {which} port"), ErrorKind::NotFound.into()))
    };
    let (stomp, epmd, dist) = (peer.port(), port("epmd")?, port("dist")?);
    let node = format!("wsbench{stomp}@localhost");
    let ctl = || rabbitmq_command(RABBITMQCTL, peer.dir(), &node, epmd, dist, rabbitmq_user());
    run_to_success(PEER, ctl().arg("add_user").arg(name).arg(password))?;
    run_to_success(
        PEER,
        ctl().arg("set_permissions").arg("-p").arg("/").arg(name).arg(".*").arg(".*").arg(".*"),
    )
}
