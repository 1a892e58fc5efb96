fn main() {
    std::process::exit(bloatlab_probe::cli::main())
}
