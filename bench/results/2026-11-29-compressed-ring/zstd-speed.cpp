#include <zstd.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
int main(int argc,char**argv){
  int fd=open(argv[1],O_RDONLY); struct stat st; fstat(fd,&st);
  std::vector<char> all(st.st_size); pread(fd,all.data(),st.st_size,0);
  std::vector<const char*> pages;
  for(size_t o=0;o+4096<=all.size();o+=4096){ bool z=true; for(int i=0;i<4096;i+=64) if(all[o+i]){z=false;break;} if(!z) pages.push_back(&all[o]); }
  printf("%zu nonzero pages\n",pages.size());
  if(pages.size()>20000) pages.resize(20000);
  int levels[]={1,-1,-3,-5,-10};
  ZSTD_CCtx*c=ZSTD_createCCtx(); ZSTD_DCtx*d=ZSTD_createDCtx();
  std::vector<char> out(8192), back(4096);
  for(int L:levels){ size_t tot=0; auto t0=std::chrono::steady_clock::now();
    std::vector<std::vector<char>> outs;
    for(auto p:pages){ size_t n=ZSTD_compressCCtx(c,out.data(),out.size(),p,4096,L); tot+=n; outs.emplace_back(out.data(),out.data()+n);} 
    auto t1=std::chrono::steady_clock::now();
    for(auto&o:outs){ ZSTD_decompressDCtx(d,back.data(),4096,o.data(),o.size()); }
    auto t2=std::chrono::steady_clock::now();
    double n=pages.size();
    printf("L%3d ratio %.2f comp %.2f us dec %.2f us\n",L,4096.0*n/tot,std::chrono::duration<double,std::micro>(t1-t0).count()/n,std::chrono::duration<double,std::micro>(t2-t1).count()/n);
  }
}
