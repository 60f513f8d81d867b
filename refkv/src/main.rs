fn main() {
    eprintln!("refkv: not built yet");
    std::process::exit(2);
}
